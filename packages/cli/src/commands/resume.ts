/**
 * `cairn runs resume <runId>`. A run in a final status never leaves it (the store's contract), so resuming
 * means: continue a run that has not ended and that no live worker holds. With `--module` exporting the run's
 * definition, it is performed here, in this process, to its end or its next wait. Without it, nothing here
 * can perform it: the command says so and that any worker with the definition will claim it (it is claimable).
 */
import { hostname } from 'node:os';
import {
  CairnError,
  cairnTracer,
  defaultStoreRetry,
  isCairnError,
  isTerminalStatus,
  isWaitDue,
  RunNotFoundError,
  runDurable,
  RunWaitingError,
  systemClock,
  type JsonValue,
} from '@cairn/sdk';
import type { RunInfo } from '@cairn/worker';
import { exitCodes } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { refuseEncryptedWrite } from '../encrypted-view.js';
import { formatTime, formatValue } from '../render/format.js';
import { describeWait } from '../render/run-list.js';

/** What `runs resume --json` prints. */
export interface ResumeReport {
  runId: string;
  /**
   * `claimable`: no definition here, a worker will claim it. `released`: Ctrl-C handed it over before it ended
   * (exit 130). Otherwise how the run stands after this process performed it: `completed`, `failed`,
   * `cancelled`, `dead_lettered`, `suspended`, or `waiting` at its next wait.
   */
  outcome:
    | 'released'
    | 'claimable'
    | 'completed'
    | 'failed'
    | 'cancelled'
    | 'dead_lettered'
    | 'waiting'
    | 'suspended';
  status: string;
  output?: JsonValue;
  error?: { code: string; message: string };
}

export async function resumeRun(
  context: CommandContext,
  { runId }: { runId: string },
): Promise<number> {
  const { client, opened } = context;
  const info = await client.get(runId);
  if (info === undefined) throw new RunNotFoundError(runId);
  await refuseUnresumable(context, info);

  const runnable = opened.runnables.find(
    (item) => item.kind === info.kind && item.name === info.name,
  );
  if (runnable === undefined) {
    report(
      context,
      { runId, outcome: 'claimable', status: info.status },
      () =>
        `Run ${runId} (${info.kind} ${info.name}, ${info.status}) is claimable: no live worker holds it, and ` +
        `any worker with ${info.kind} "${info.name}" will claim it. To perform it here, pass --module with a ` +
        `module exporting that definition.`,
    );
    return 0;
  }
  // Performed here, it would start from a checkpoint it cannot read and write its own in plaintext.
  refuseEncryptedWrite(info, 'resume');

  const durable = runnable.durable;
  try {
    // As a worker performs a run (runDurable), so that Ctrl-C hands it over (released, claimable at once)
    // instead of cancelling it, which is what aborting a runner's `signal` would do.
    const result = await runDurable(runnable.definition, {
      store: opened.store,
      runId,
      mode: 'resume',
      force: false,
      clock: systemClock,
      owner: `cairn-cli:${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`,
      leaseMs: durable?.leaseMs ?? 30_000,
      storeRetry: { ...defaultStoreRetry, ...durable?.storeRetry },
      deleteOnComplete: durable?.deleteOnComplete ?? false,
      tracer: cairnTracer(runnable.tracerProvider),
      ...(context.signal === undefined ? {} : { handOverSignal: context.signal }),
    });
    const output = (result.output ?? null) as JsonValue;
    report(
      context,
      { runId, outcome: 'completed', status: 'completed', output },
      () => `Run ${runId} completed here. Output: ${formatValue(output)}`,
    );
    return 0;
  } catch (error) {
    if (isCairnError(error) && error.code === 'RUN_RELEASED') {
      report(
        context,
        { runId, outcome: 'released', status: 'running' },
        () =>
          `Interrupted: run ${runId} was handed over; any worker with ${info.kind} "${info.name}" will claim it.`,
      );
      return exitCodes.interrupted;
    }
    if (error instanceof RunWaitingError) {
      const now = await client.get(runId);
      report(
        context,
        { runId, outcome: 'waiting', status: 'waiting' },
        () =>
          `Run ${runId} ran here to its next wait; it waits for ${describeWait(now?.waitingFor ?? null) || 'its wait'}.`,
      );
      return 0;
    }
    // The run ended here (its step failed, it was cancelled meanwhile): that is its outcome, not ours.
    const now = await client.get(runId);
    if (now === undefined || !(isTerminalStatus(now.status) || now.status === 'suspended'))
      throw error;
    const failure =
      now.error === undefined ? undefined : { code: now.error.code, message: now.error.message };
    report(
      context,
      {
        runId,
        outcome: now.status as ResumeReport['outcome'],
        status: now.status,
        ...(failure === undefined ? {} : { error: failure }),
      },
      () =>
        `Run ${runId} ended ${now.status} here${failure === undefined ? '.' : `: ${failure.code}: ${failure.message}`}`,
    );
    return 0;
  }
}

/** Refuses a run this command must not continue: a child, ended, held by a live worker, or a wait not due. */
async function refuseUnresumable(context: CommandContext, info: RunInfo): Promise<void> {
  const { runId } = info;
  if (info.rootRunId !== null) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Run "${runId}" is a child run of "${info.rootRunId}": it is resumed with that run.`,
      { data: { runId, rootRunId: info.rootRunId } },
    );
  }
  if (isTerminalStatus(info.status)) {
    throw new CairnError(
      'RUN_ENDED',
      `Run "${runId}" already ended ${info.status}; a final status is never left. Start a new run instead.`,
      { data: { runId, status: info.status } },
    );
  }
  if (info.held) {
    throw new CairnError(
      'LEASE_HELD',
      `Run "${runId}" is held by live worker ${info.owner} (lease until ${formatTime(info.leaseUntil ?? 0)}): it is running there.`,
      { retryable: true, data: { runId, owner: info.owner, leaseUntil: info.leaseUntil } },
    );
  }
  if (info.status === 'waiting' && info.wait !== null) {
    const mailbox = await context.opened.store.mailbox(runId);
    if (!isWaitDue(info.wait, mailbox, Date.now())) {
      throw new CairnError(
        'RUN_WAITING',
        `Run "${runId}" waits for ${describeWait(info.waitingFor) || 'its wait'}; it continues once that comes (approve, reject or signal it).`,
        { data: { runId } },
      );
    }
  }
}

function report(context: CommandContext, value: ResumeReport, text: () => string): void {
  if (context.json) context.printJson(value);
  else context.print(text());
}
