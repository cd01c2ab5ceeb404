import { context as otelContext, trace, type Span } from '@opentelemetry/api';
import {
  CairnError,
  deserializeError,
  isCairnError,
  RunNotFoundError,
  RunWaitingError,
  serializeError,
} from '../errors.js';
import { StorableViews, storableJson, type JsonValue } from '../json.js';
import type { RunRecord } from '../store/contract.js';
import { isWaitDue, type RunSignal, type RunWait } from '../store/waits.js';
import type { Attempt } from './attempt.js';
import { deadLetter, defaultMaxStalls, tooManyStalls } from './dead-letter.js';
import { checkCheckpointSeq, checkDrift, finishedResult } from './stored-run-checks.js';
import { EffectPool, type ChildLauncher } from './effect-pool.js';
import { openRunStream, type RunStream } from './run-stream.js';
import { releaseWhileHeld } from './lease-keeper.js';
import type { ChildStarter, DurableRunOptions, DurableRunResult, Holding } from './run-options.js';
import { RunWriter } from './run-writer.js';
import { stopAfterError } from './stop-attempt.js';
import { parseRuntimeSnapshot, takeSnapshot, type RuntimeSnapshot } from './runtime-snapshot.js';
import { SignalCursor, storedWait, wokenEvent } from './signal-cursor.js';
import { Stepper } from './stepper.js';
import { checkJournal, checkStoredEffects } from './stored-journal.js';
import type {
  DurableDefinition,
  PerformCommand,
  StepResult,
  WaitCommand,
} from './step-function.js';
import { HistoryRecorder, type HistoryEnd } from './history-recorder.js';
import { AttemptTracing, traceOrigin } from './tracing.js';

export async function runUnderLease<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  options: DurableRunOptions<Input>,
  attempt: Attempt,
  holding: Holding,
  runSpan: Span,
  startChild: ChildStarter,
): Promise<DurableRunResult<State, Output>> {
  const { store, runId, clock } = options;
  const currentLease = () => (holding.type === 'own' ? holding.keeper.lease : holding.lease);
  let released = false;
  const release = async () => {
    // A child's lease is its parent's: the parent releases.
    if (holding.type !== 'own' || released) return;
    released = true;
    await releaseWhileHeld(store, currentLease(), holding.keeper.deadline, clock);
  };
  let pool: EffectPool<State, Input, Output> | undefined;
  let stream: RunStream | undefined;
  const launchChild: ChildLauncher = (childDefinition, input, childRunId, parentContext) =>
    startChild(
      childDefinition,
      {
        ...options,
        runId: childRunId,
        mode: 'execute',
        input,
        deleteOnComplete: false,
        parentContext,
      },
      attempt,
      currentLease,
    );
  const runContext = trace.setSpan(options.parentContext ?? otelContext.active(), runSpan);
  const tracing = new AttemptTracing(options.tracer, definition.telemetry, runSpan, runContext);
  let writer: RunWriter | undefined;
  let loadedRun: RunRecord | undefined;

  try {
    // Read under the lease (a previous holder may have written since the first look), by the claim itself
    // when the store read the run then.
    const loaded =
      (holding.type === 'own' ? holding.claimed : undefined) ?? (await store.load(runId));
    if (loaded === undefined) throw new RunNotFoundError(runId);
    const finished = finishedResult(definition, loaded.run);
    if (finished !== undefined) {
      await release();
      return finished;
    }
    checkDrift(definition, loaded.run, options.force);
    loadedRun = loaded.run;
    const maxStalls = options.maxStalls ?? defaultMaxStalls;
    if (holding.type === 'own' && loaded.run.stalls >= maxStalls) {
      released = true;
      await deadLetter(store, currentLease(), tooManyStalls(loaded.run, maxStalls));
    }
    let snapshot: RuntimeSnapshot<State>;
    try {
      snapshot = parseRuntimeSnapshot(
        runId,
        loaded.run.snapshot,
        (s) => definition.parseState(s),
        (input) => definition.init(input as Input, runId),
      );
    } catch (error) {
      if (isCairnError(error) && error.data.input === true) {
        // A run started by name whose input its definition cannot start from ends failed, once: retrying
        // cannot change its input. The store may be down; the next attempt then decides again.
        await store
          .save(attempt.fence, {
            status: 'failed',
            signature: definition.signature,
            snapshot: loaded.run.snapshot,
            journalSeq: 0,
            error: storableJson(serializeError(error)),
            release: holding.type === 'own',
          })
          .catch(() => undefined);
      }
      throw error;
    }
    checkCheckpointSeq(runId, snapshot.journalSeq, loaded.checkpointSeq);
    const journal = [
      ...(snapshot.carried ?? []),
      ...checkJournal(runId, loaded.journal, 'journal'),
    ];
    checkStoredEffects(definition, runId, snapshot.state, snapshot.pending ?? [], journal);
    const resumed = snapshot.pending !== null;
    // A run created without an origin (a client's start, for a worker) takes this attempt's run span as its
    // origin, stored with the first checkpoint: later attempts link to it.
    const origin = snapshot.trace ?? traceOrigin(runSpan);
    if (origin !== undefined) snapshot.trace = origin;
    writer = new RunWriter(store, attempt, clock, options.storeRetry, journal, snapshot.journalSeq);
    const seqs = writer;
    const history = new HistoryRecorder(
      snapshot.history,
      () => seqs.nextSeq(),
      clock,
      definition.telemetry,
    );
    const views = new StorableViews();
    history.attemptStarted(
      {
        epoch: attempt.epoch,
        owner: currentLease().owner,
        takenFrom:
          holding.type === 'own' ? (holding.keeper.lease.takenFrom ?? null) : holding.takenFrom,
      },
      loaded.run.status,
    );
    if (loaded.run.status === 'suspended') await writer.updateStatus({ status: 'running' });
    const signals = new SignalCursor(store, attempt, clock, options.storeRetry);
    // Signals reach a root run only: a child's mailbox is its root's.
    const receivesSignals = definition.receivesSignals === true && holding.type === 'own';
    // Whether the mailbox may hold signals the step has not been handed: each checkpoint's receipt says, so a run
    // nobody signals never reads its mailbox between trips.
    let mayHaveMail = true;

    stream = openRunStream(options, attempt);
    pool = new EffectPool(
      definition,
      attempt,
      writer,
      clock,
      tracing,
      history,
      launchChild,
      stream,
    );
    const stepper = new Stepper(definition, clock, signals, history, tracing);
    let result: StepResult<State>;
    // A run woken from a wait is stored `waiting` until its first checkpoint: written before any effect starts.
    // A checkpoint naming no pending effect that did not end the run was a wait's: a run stored so without its
    // wait (a suspension in an earlier version cleared it) is woken as from that wait.
    const woken = loaded.run.status === 'waiting' || snapshot.pending?.length === 0;
    let checkpointFirst = woken;
    if (woken) {
      // A cancel asked while it waited is what woke it: it ends here, cancelled.
      attempt.assertActive();
      const wait = loaded.run.wait ?? { until: null, signals: [] };
      const mailbox = signals.notHandedOver(loaded.signals ?? []);
      const now = clock.now();
      if (loaded.run.status === 'waiting' && !isWaitDue(wait, mailbox, now)) {
        await release();
        throw new RunWaitingError(runId, storableJson(wait) as unknown as JsonValue);
      }
      tracing.woke(wait, mailbox, snapshot.waitingSince, now);
      result =
        snapshot.pending === null
          ? // A scheduled start: its signals stay in the mailbox for the step to take when it takes signals.
            stepper.step(snapshot.state, { type: 'start', now })
          : stepper.answerStored(snapshot.state, mailbox, (all, at) => wokenEvent(wait, all, at));
    } else if (snapshot.pending === null) {
      result = stepper.step(snapshot.state, { type: 'start', now: clock.now() });
    } else {
      // Mail the crashed holder had not handed over (whatever its last receipt said) is handed to the step
      // before anything the checkpoint names starts again, as that holder would have at this boundary.
      const unseen = receivesSignals ? signals.notHandedOver(loaded.signals ?? []) : [];
      const answered = stepper.answerInPlaceOf(snapshot.state, snapshot.pending, journal, unseen);
      if (answered !== undefined) result = answered;
      else {
        await pool.start(snapshot.pending, snapshot.state);
        result = stepper.step(snapshot.state, await pool.next());
      }
    }

    for (;;) {
      const end = result.commands.find((c) => c.type === 'complete' || c.type === 'fail');
      const performs = result.commands.filter((c): c is PerformCommand => c.type === 'perform');
      const waitCommand = result.commands.find((c): c is WaitCommand => c.type === 'wait');
      const state = result.state;
      const checkpointed = result.commands.some((c) => c.type === 'checkpoint');
      const handOver = (unseen: RunSignal[]): StepResult<State> =>
        stepper.answer(state, unseen, (now) => ({ type: 'signals', now, signals: unseen }));
      // A checkpoint refused for mail that came while it was on its way: the step answers the mail first.
      const answerRefusal = async (): Promise<StepResult<State>> => {
        const unseen = await signals.unseen();
        if (unseen.length === 0) {
          throw new CairnError(
            'STORE_FAILED',
            `The store refused run "${runId}"'s checkpoint for unread signals, then showed none.`,
          );
        }
        return handOver(unseen);
      };
      // Signals are handed over at a boundary with nothing in flight, before the step's commands are acted on:
      // the step answers them with new commands (its earlier ones never started). Before an end or a wait the
      // mailbox is read here (an end only when the last receipt saw mail: the completing checkpoint itself is
      // refused while unread mail exists); at a trip boundary, once its checkpoint's receipt says there is mail.
      const handsOver = receivesSignals && pool.pending().length === 0;
      if (handsOver && (waitCommand !== undefined || (end?.type === 'complete' && mayHaveMail))) {
        const unseen = await signals.unseen();
        mayHaveMail = false;
        if (unseen.length > 0) {
          result = handOver(unseen);
          continue;
        }
      }
      // The snapshot and the journal seq it accounts for are taken together, right before it is written:
      // marks recorded after that (while it is on its way) stay in the journal. The store serializes it;
      // nothing changes the state while the checkpoint is on its way (the loop waits for it).
      const runtimeSnapshot = (
        pending: PerformCommand[],
        last?: HistoryEnd,
        waitingSince?: number,
      ) =>
        takeSnapshot({
          state,
          pending,
          history,
          writer: writer!,
          views,
          trace: snapshot.trace,
          last,
          waitingSince,
        });

      if (end !== undefined) {
        // A run that ends while effects still run (a planner failing mid-wave) lets them finish first.
        await pool.drain();
      }
      if (end?.type === 'complete') {
        const output = storableJson(end.output);
        const receipt = await writer.checkpoint({
          status: 'completed',
          signature: definition.signature,
          ...runtimeSnapshot([], { status: 'completed' }),
          ...signals.consumption(),
          output,
          release: holding.type === 'own',
          ...(receivesSignals ? { unlessMail: true } : stepper.guard),
        });
        if (!receipt.written) {
          // A signal was accepted while the run was about to end: the step reads it instead of ending.
          result = await answerRefusal();
          continue;
        }
        tracing.closeAll();
        await release();
        // Retention only: a run that could not be deleted now is pruned later.
        if (options.deleteOnComplete) await store.delete(runId).catch(() => undefined);
        return {
          runId,
          output: definition.parseOutput(output),
          state,
          epoch: attempt.epoch,
          resumed,
        };
      }
      if (end?.type === 'fail') {
        const receipt = await writer.checkpoint({
          status: 'failed',
          signature: definition.signature,
          ...runtimeSnapshot([], { status: 'failed', code: end.error.code }),
          ...signals.consumption(),
          error: storableJson(end.error),
          release: holding.type === 'own',
          ...stepper.guard,
        });
        if (!receipt.written) {
          result = await answerRefusal();
          continue;
        }
        tracing.closeAll(end.error);
        await release();
        throw deserializeError(end.error);
      }
      if (waitCommand !== undefined) {
        const problem =
          performs.length > 0 || pool.pending().length > 0
            ? 'while effects were pending'
            : holding.type !== 'own'
              ? 'in a child run (only a root run waits)'
              : undefined;
        let wait: RunWait;
        try {
          wait = storedWait(definition, waitCommand, problem);
        } catch (error) {
          result = { state, commands: [{ type: 'fail', error: serializeError(error) }] };
          continue;
        }
        // Already due (a signal that came before the wait began, a time already past): go on without waiting.
        const unseen = await signals.unseen();
        const now = clock.now();
        if (isWaitDue(wait, unseen, now)) {
          result = stepper.answer(state, unseen, (at) => wokenEvent(wait, unseen, at));
          continue;
        }
        const receipt = await writer.checkpoint({
          status: 'waiting',
          signature: definition.signature,
          ...runtimeSnapshot([], { wait }, now),
          ...signals.consumption(),
          wait,
          release: true,
          ...stepper.guard,
        });
        if (!receipt.written) {
          result = await answerRefusal();
          continue;
        }
        signals.consumed();
        tracing.waiting(wait);
        tracing.closeAll();
        await release();
        throw new RunWaitingError(runId, wait as unknown as JsonValue);
      }
      const pending = [...pool.pending(), ...performs];
      if (pending.length === 0) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `The ${definition.kind} "${definition.name}" step returned neither an effect nor an end.`,
        );
      }
      // The journal, and the outcomes handed back, are keyed by effect id: two pending effects may not share
      // one. Like a step that throws, the run ends failed: the step would command the same again.
      const repeated = repeatedId(pending);
      if (repeated !== undefined) {
        const error = new CairnError(
          'INVALID_ARGUMENT',
          `The ${definition.kind} "${definition.name}" step commanded effect "${repeated}" while one with that id was pending.`,
        );
        result = { state, commands: [{ type: 'fail', error: serializeError(error) }] };
        continue;
      }
      if (checkpointed || checkpointFirst || signals.unconsumed) {
        const receipt = await writer.checkpoint(
          {
            status: 'running',
            signature: definition.signature,
            ...runtimeSnapshot(pending),
            ...signals.consumption(),
            ...stepper.guard,
          },
          pending.map((command) => command.id),
        );
        if (!receipt.written) {
          result = await answerRefusal();
          continue;
        }
        stepper.recorded();
        signals.consumed();
        checkpointFirst = false;
        mayHaveMail = receipt.mail;
        // Mail at a trip boundary: the step answers it before what this checkpoint names starts. Nothing of it
        // has started, and the checkpoint that consumes the signals replaces this one before anything does.
        if (handsOver && checkpointed && receipt.mail) {
          const unseen = await signals.unseen();
          mayHaveMail = false;
          if (unseen.length > 0) {
            result = handOver(unseen);
            continue;
          }
        }
      }
      // A unit (a trip, a node) ends once nothing pending belongs to it, checkpointed or not.
      tracing.closeSettledUnits(pending);
      await pool.start(performs, state);
      result = stepper.step(state, await pool.next());
    }
  } catch (error) {
    await stream?.close();
    tracing.closeAll(error);
    await stopAfterError(error, attempt, writer, pool, store, loadedRun);
    // A crashed process does nothing more. Every other stop releases, a lost lease included: the store
    // changes nothing for it but frees what it keeps for the claim (a lock, a session).
    if (attempt.stopped?.type !== 'crashed') await release();
    throw error;
  }
}

function repeatedId(commands: readonly PerformCommand[]): string | undefined {
  const ids = new Set<string>();
  for (const { id } of commands) {
    if (ids.has(id)) return id;
    ids.add(id);
  }
  return undefined;
}
