import {
  CairnError,
  callKey,
  checkDecision,
  checkNewSignal,
  decisionRefusal,
  decisionSignal,
  standingDecision,
  type ApprovalDecision,
  type JsonValue,
  type SignalReceipt,
  checkRunWait,
  RunNotFoundError,
  runEndedError,
  snapshotInvalidError,
  type Checkpoint,
  type DurableStore,
  type Fence,
  type RunSignal,
  type RunWait,
} from '@cairn/sdk';
import { runScript, type Reply, type StoreContext } from './context.js';
import { decideRun } from './lua/decide.js';
import { bucketCount } from './keys.js';
import { readMailbox } from './lua/mailbox.js';
import { nextWakeTime } from './lua/next-wake.js';
import { signalRun } from './lua/signal.js';

/**
 * A wait as the scripts take it: its JSON, its time ('' for none) and its signal names joined by NUL, so a
 * script matches names without decoding JSON. A name holding NUL is left out: no signal name holds one, so it
 * could never match, and splitting on it could make a part of it match. Three '' for no wait.
 */
export function waitArgs(wait: RunWait | null): [string, string, string] {
  if (wait === null) return ['', '', ''];
  const names = wait.signals.filter((name) => !name.includes('\u0000'));
  return [
    JSON.stringify(wait),
    wait.until === null ? '' : String(wait.until),
    names.join('\u0000'),
  ];
}

/**
 * The wait a checkpoint stores, checked: only a root run's holder writes one, giving the run up with it (a
 * waiting run holds no lease). `INVALID_ARGUMENT` otherwise, before anything is written.
 */
export function checkpointWait(fence: Fence, checkpoint: Checkpoint): RunWait | null {
  if (checkpoint.status !== 'waiting') return null;
  const wait = checkRunWait(checkpoint.wait as RunWait);
  if (checkpoint.release !== true || fence.root !== undefined) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      'A wait is written by the holder of a run’s own lease, releasing it.',
      { data: { runId: fence.runId } },
    );
  }
  return wait;
}

/**
 * A checkpoint's `signalsConsumed` as the save script takes it: whole seqs only (2.5 consumes 1 and 2, as it does
 * in memory), '' for a value under the first seq (or NaN), which consumes nothing.
 */
export function consumedArg(signalsConsumed: number | undefined): string {
  if (signalsConsumed === undefined || !(signalsConsumed >= 1)) return '';
  return String(Math.floor(Math.min(signalsConsumed, Number.MAX_SAFE_INTEGER)));
}

/**
 * A claimer's clock reading as the claim script takes it: '' for none (the server's clock decides), and a finite
 * number always, so Lua never meets NaN or an infinity: NaN makes no time due (as `until <= NaN` never holds), an
 * infinity every time or none.
 */
export function clockArg(now: number | undefined): string {
  if (now === undefined) return '';
  if (Number.isNaN(now)) return String(-Number.MAX_VALUE);
  return String(Math.max(-Number.MAX_VALUE, Math.min(Number.MAX_VALUE, now)));
}

/** Signals from a script's reply (their JSON, in seq order). */
export function toSignals(reply: unknown, runId: string): RunSignal[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((text) => {
    try {
      return JSON.parse(String(text)) as RunSignal;
    } catch {
      throw snapshotInvalidError(runId, 'a signal in its mailbox is not JSON');
    }
  });
}

/** A decision sent to a run, by the rules of the sdk's `decide` (see `lua/decide.ts`). */
async function decideIn(
  ctx: StoreContext,
  runId: string,
  decision: ApprovalDecision,
): Promise<SignalReceipt> {
  const reply = await runScript(ctx, 'decide on a call', decideRun, runId, [
    JSON.stringify(decision),
    callKey(decision.callId),
    ctx.keys.channel,
  ]);
  const kept = () => standingDecision(JSON.parse(String(reply[2])) as JsonValue);
  switch (reply[0]) {
    case 'ok':
      return { seq: Number(reply[1]), duplicate: false, decision: kept() };
    case 'duplicate':
      return { seq: Number(reply[1]), duplicate: true, decision: kept() };
    case 'not-waiting':
      return Promise.reject(
        decisionRefusal(runId, decision.callId, {
          reason: 'not-waiting',
          status: String(reply[1]),
        }),
      );
    case 'other-arguments':
      return Promise.reject(
        decisionRefusal(runId, decision.callId, {
          reason: 'other-arguments',
          argsHash: String(reply[1]),
        }),
      );
    default:
      return Promise.reject(signalRefusal(runId, reply));
  }
}

/** The typed error of a signal or decision script's refusal ({'missing'}, {'child', root} or {'ended', status}). */
function signalRefusal(runId: string, reply: Reply): CairnError {
  switch (reply[0]) {
    case 'missing':
      return new RunNotFoundError(runId);
    case 'child':
      return new CairnError(
        'INVALID_ARGUMENT',
        `Run "${runId}" is a child run: signal its root run "${String(reply[1])}".`,
        { data: { runId, rootRunId: String(reply[1]) } },
      );
    case 'ended':
      return runEndedError(runId, String(reply[1]));
    default:
      return new CairnError(
        'STORE_FAILED',
        `Unexpected reply "${String(reply[0])}" to signal run "${runId}".`,
      );
  }
}

/**
 * The mailbox half of the store: `signal`, `mailbox`, and `nextWake` over the buckets' waits sets. Each call
 * first awaits `layoutCurrent`, which refuses a prefix still in an older key layout (whose runs it cannot see).
 */
export function waitOperations(
  ctx: StoreContext,
  layoutCurrent: () => Promise<void>,
): Pick<DurableStore, 'signal' | 'mailbox' | 'nextWake'> {
  const { keys, gate } = ctx;
  return {
    async signal(runId, signal) {
      const checked = checkNewSignal(signal);
      await layoutCurrent();
      if (checked.name === decisionSignal)
        return decideIn(ctx, runId, checkDecision(runId, checked.payload));
      const reply = await runScript(ctx, 'signal a run', signalRun, runId, [
        JSON.stringify(checked),
        checked.name,
        checked.idempotencyKey ?? '',
        keys.channel,
      ]);
      if (reply[0] === 'ok') return { seq: Number(reply[1]), duplicate: false };
      if (reply[0] === 'duplicate') return { seq: Number(reply[1]), duplicate: true };
      throw signalRefusal(runId, reply);
    },

    async mailbox(runId) {
      await layoutCurrent();
      return toSignals(await runScript(ctx, 'read a mailbox', readMailbox, runId, []), runId);
    },

    async nextWake(definitions, after) {
      if (definitions.length === 0) return null;
      await layoutCurrent();
      const wanted = definitions.flatMap((d) => [d.kind, d.name]);
      const times = await Promise.all(
        Array.from({ length: bucketCount }, (_, bucket) =>
          gate.script(
            'find the next wake-up',
            nextWakeTime,
            [keys.waits(bucket)],
            [
              keys.runKeyPrefix(bucket, 'run'),
              keys.runKeyPrefix(bucket, 'lease'),
              after === undefined ? '-inf' : `(${clockArg(after)}`,
              ...wanted,
            ],
          ),
        ),
      );
      const found = times.filter((time) => typeof time === 'string').map(Number);
      return found.length === 0 ? null : Math.min(...found);
    },
  };
}
