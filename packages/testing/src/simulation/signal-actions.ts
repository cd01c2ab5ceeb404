import {
  agentSignals,
  isCairnError,
  isWaitDue,
  sendApprovalDecision,
  toolArgsHash,
  type ApprovalDecision,
  type JsonValue,
  type NewSignal,
  type SignalReceipt,
} from '@cairn/sdk';
import type { Action } from './actions.js';
import { clientCancel } from './client-cancel.js';
import { holdableCalls, holdableHash, maxMessages } from './approval-world.js';
import type { Observation } from './mailbox-ledger.js';
import { holdsForApproval } from './run-ends.js';
import type { Schedule } from './schedule.js';

/** One signal a client is about to send: through the client's checked path, or raw to the store. */
interface Send {
  label: string;
  signal: NewSignal;
  /** Set for a decision sent the way `approve` and `reject` send it (`sendApprovalDecision`). */
  decision?: ApprovalDecision;
}

/**
 * The signals a schedule sends, at whatever point its runs are: decisions on held calls (approvals with the
 * right hash, another or none; rejections) through the client and raw, steers, follow-ups, signals of other
 * names, repeats of signals already accepted (a retried webhook), several at once racing each other, signals
 * sent while a run's write (its completing checkpoint among them) is on its way, cancels of waiting runs, and
 * wakes under a store outage.
 */
export function signalActions(s: Schedule): Action[] {
  const list: Action[] = [];
  const add = (weight: number, name: string, run: () => Promise<void>) =>
    list.push({ weight, name, run });
  const live = [...s.fates.values()].filter((fate) => !fate.discarded);
  const holding = live.filter((fate) => holdsForApproval(fate.kind)).map((fate) => fate.runId);
  if (holding.length > 0) {
    const aim = () => aimed(s, holding);
    add(10, 'decide', async () => deliver(s, await aim(), (o) => [decision(s, o.runId, o)]));
    add(3, 'steer', async () => deliver(s, await aim(), (o) => message(s, o, 'steer')));
    add(2, 'follow up', async () => deliver(s, await aim(), (o) => message(s, o, 'followUp')));
    add(3, 'race', async () => deliver(s, await aim(), (o) => race(s, o)));
    add(1, 'cancel a holding run', async () => {
      const runId = s.random.pick(holding);
      s.fates.get(runId)!.cancelRequested = true;
      s.note(`client cancels ${runId}: ${await clientCancel(s, runId)}`);
    });
    const waiting = holding.filter((runId) => s.seenWaiting.has(runId));
    if (waiting.length > 0) add(4, 'wake under an outage', () => wakeUnderOutage(s, waiting));
  }
  if (live.length > 0) {
    add(1, 'user signal', () => deliver(s, s.random.pick(live).runId, () => [note(s)]));
    add(2, 'repeat', () => repeat(s, s.random.pick(live).runId));
  }
  const inFlight = s.scheduler
    .pending((held) => held.kind === 'write')
    .map((held) => /^(?:save|append|updateStatus) (r\d+)$/.exec(held.label)?.[1])
    .filter((runId): runId is string => runId !== undefined && holding.includes(runId));
  if (inFlight.length > 0) {
    add(4, 'signal a write in flight', () => deliver(s, s.random.pick(inFlight), (o) => any(s, o)));
  }
  return list;
}

/** A holding run to signal: mostly one that waits now (where decisions count), else any. */
async function aimed(s: Schedule, holding: readonly string[]): Promise<string> {
  const waiting: string[] = [];
  for (const runId of holding) {
    const status = (await s.client.store.load(runId).catch(() => undefined))?.run.status;
    if (seen(s, runId, status)) waiting.push(runId);
  }
  return s.random.pick(waiting.length > 0 && s.random.chance(0.8) ? waiting : holding);
}

/** A run's view of its mailbox, before sends are composed for it. */
type Observed = Observation & { runId: string };

/** Looks at the run, composes signals from what it saw, sends them at once, and records the receipts. */
async function deliver(
  s: Schedule,
  runId: string,
  compose: (observed: Observed) => Send[],
): Promise<void> {
  const generation = s.world.generation(runId);
  const loaded = await s.client.store.load(runId).catch(() => undefined);
  seen(s, runId, loaded?.run.status);
  const observed = { ...s.mailboxes.observe(runId, generation, loaded), runId };
  const sends = compose(observed);
  const answers = await Promise.all(
    sends.map((send) =>
      sendOne(s, runId, send).then(
        (receipt) => ({ send, receipt, outcome: `seq ${receipt.seq}` }),
        (error: unknown) => ({
          send,
          receipt: undefined,
          outcome: isCairnError(error) ? error.code : String(error),
        }),
      ),
    ),
  );
  // Signals racing each other answer in any order: the new ones are recorded before the duplicates of them.
  answers.sort((a, b) => Number(a.receipt?.duplicate ?? 0) - Number(b.receipt?.duplicate ?? 0));
  for (const { send, receipt, outcome } of answers) {
    if (receipt !== undefined) {
      const via = send.decision === undefined ? 'raw' : 'client';
      s.mailboxes.record(runId, generation, send.signal, receipt, {
        at: s.clock.now(),
        via,
        observed,
      });
    }
    const duplicate = receipt?.duplicate === true ? `duplicate of ${outcome}` : outcome;
    s.note(`client ${send.label} to ${runId} (${observed.status}): ${duplicate}`);
  }
}

function sendOne(s: Schedule, runId: string, send: Send): Promise<SignalReceipt> {
  return send.decision === undefined
    ? s.client.store.signal(runId, send.signal)
    : sendApprovalDecision(s.client.store, runId, send.decision);
}

/** A decision on one of the run's holdable calls: mostly one its wait lists, sometimes one it does not. */
function decision(s: Schedule, runId: string, observed: Observation): Send {
  const fate = s.fates.get(runId)!;
  const calls = holdableCalls(fate.kind, runId);
  const listed = observed.pending.filter((p) => calls.some((c) => c.callId === p.callId));
  const callId =
    listed.length > 0 && s.random.chance(0.8)
      ? s.random.pick(listed).callId
      : s.random.pick(calls).callId;
  const call = calls.find((c) => c.callId === callId)!;
  const n = (s.sent += 1);
  const approved = s.random.chance(0.6);
  const roll = s.random.next();
  const argsHash =
    roll < 0.8
      ? holdableHash(call)
      : roll < 0.95
        ? toolArgsHash({ value: `tampered ${runId}` })
        : undefined;
  const decided: ApprovalDecision = approved
    ? { callId, approved, ...(argsHash === undefined ? {} : { argsHash }), by: `sim-${n}` }
    : { callId, approved, by: `sim-${n}`, reason: `rejection #${n}` };
  const hash =
    argsHash === undefined
      ? 'no hash'
      : argsHash === holdableHash(call)
        ? 'its hash'
        : 'another hash';
  const what = approved ? `approval of ${callId} with ${hash}` : `rejection of ${callId}`;
  const payload = decided as unknown as JsonValue;
  const clientKey = `${agentSignals.approval}:${callId}`;
  if (s.random.chance(0.6)) {
    const signal = { name: agentSignals.approval, payload, idempotencyKey: clientKey };
    return { label: `${what} #${n}`, signal, decision: decided };
  }
  const key = s.random.pick([clientKey, undefined, `webhook-${n}`]);
  const signal: NewSignal = {
    name: agentSignals.approval,
    payload,
    ...(key === undefined ? {} : { idempotencyKey: key }),
  };
  return { label: `raw ${what} #${n}`, signal };
}

/** A steer or a follow-up, while the run has had fewer than `maxMessages` (each may add a trip). */
function message(s: Schedule, observed: Observed, kind: 'steer' | 'followUp'): Send[] {
  const generation = s.world.generation(observed.runId);
  const sent = s.mailboxes
    .of(observed.runId, generation)
    .filter((x) => x.name === agentSignals.steer || x.name === agentSignals.followUp);
  if (sent.length >= maxMessages) return [];
  const n = (s.sent += 1);
  const text = `${kind} #${n}`;
  const key = s.random.chance(0.3) ? `message-${n}` : undefined;
  const signal: NewSignal = {
    name: agentSignals[kind],
    payload: s.random.chance(0.5) ? text : { content: text },
    ...(key === undefined ? {} : { idempotencyKey: key }),
  };
  return [{ label: text, signal }];
}

/** A signal of a name no definition reads: consumed unread. */
function note(s: Schedule): Send {
  const n = (s.sent += 1);
  return { label: `note #${n}`, signal: { name: 'sim.note', payload: { n } } };
}

/** Any signal a holding run may get. */
function any(s: Schedule, observed: Observed): Send[] {
  const roll = s.random.next();
  if (roll < 0.6) return [decision(s, observed.runId, observed)];
  if (roll < 0.8) return message(s, observed, 'steer');
  if (roll < 0.9) return message(s, observed, 'followUp');
  return [note(s)];
}

/** A decision and one or two other signals sent at once: the store's mailbox order decides between them. */
function race(s: Schedule, observed: Observed): Send[] {
  const others = Array.from({ length: 1 + s.random.int(2) }, () => any(s, observed)).flat();
  return [decision(s, observed.runId, observed), ...others];
}

/** Sends again a signal the store accepted with an idempotency key, as a retried webhook would. */
async function repeat(s: Schedule, runId: string): Promise<void> {
  const generation = s.world.generation(runId);
  const keyed = s.mailboxes.of(runId, generation).filter((x) => x.idempotencyKey !== null);
  if (keyed.length === 0) return;
  const first = s.random.pick(keyed);
  const signal: NewSignal = {
    name: first.name,
    payload: first.payload,
    idempotencyKey: first.idempotencyKey!,
  };
  await deliver(s, runId, () => [{ label: `repeat of seq ${first.seq}`, signal }]);
}

/**
 * A process whose next writes the store refuses (1 to 5 of them: the runtime's retries in the simulation give
 * up after 3) wakes a holding run: one whose wait is due, or a waiting one a signal makes due first, so that
 * the woken attempt's first checkpoint meets the outage.
 */
async function wakeUnderOutage(s: Schedule, holding: readonly string[]): Promise<void> {
  const due: string[] = [];
  const waiting: string[] = [];
  for (const runId of holding) {
    const loaded = await s.client.store.load(runId).catch(() => undefined);
    const run = loaded?.run;
    if (!seen(s, runId, run?.status) || run === undefined) continue;
    if (run.wait === null || run.owner !== null) continue;
    if (isWaitDue(run.wait, loaded!.signals, s.clock.now())) due.push(runId);
    else waiting.push(runId);
  }
  const candidates = due.length > 0 ? due : waiting;
  if (candidates.length === 0) return;
  const runId = s.random.pick(candidates);
  if (due.length === 0) await deliver(s, runId, (o) => any(s, o));
  // A worker with nothing else to write, so that the woken attempt's writes are the ones refused.
  const idle = s.processes.filter((p) => p.available && p.attempts.size === 0);
  const process = idle.length > 0 ? s.random.pick(idle) : await s.spawn();
  process.failingWrites = s.random.pick([1, 2, 3, 3, 3, 4, 5]);
  s.note(`${process.name}'s next ${process.failingWrites} writes fail; it wakes ${runId}`);
  void s.attempt(process, runId);
  // The retries of the woken attempt's first write run out (or succeed) now, 100 and 300 ms later.
  await s.scheduler.quiet();
  await s.advance(1_000);
}

/** Notes whether the client saw the run waiting; true when it did. */
function seen(s: Schedule, runId: string, status: string | undefined): boolean {
  if (status === 'waiting') s.seenWaiting.add(runId);
  else s.seenWaiting.delete(runId);
  return status === 'waiting';
}
