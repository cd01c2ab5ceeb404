import {
  CairnError,
  checkNewRunId,
  checkSubject,
  checkRunId,
  deserializeError,
  isCairnError,
  isTerminalStatus,
  initialRunSnapshot,
  RunNotFoundError,
  unstartedRunSnapshot,
  unstartedSignature,
  serializeError,
  systemClock,
  type Clock,
  type DurableDefinition,
  type DurableStore,
  type JsonValue,
  type RunFilter,
  type NewSignal,
  type RunRecord,
  type RunStatus,
  type RunWait,
  type SignalReceipt,
  type ForgetOptions,
  type ForgetReport,
  type ReencryptOptions,
  type ReencryptReport,
  type ForgetTarget,
} from '@cairn/sdk';
import { signalSender, type SignalSender } from './client-signals.js';
import { streamReader, type StreamReader } from './client-stream.js';
import { eventReader, type EventReader } from './client-watch.js';
import { runInfo, type RunInfo } from './run-info.js';

export type { RunInfo } from './run-info.js';

/** What `start` returns. */
export interface StartedRun {
  runId: string;
  /** False when a run with this id (or idempotency key) already existed: nothing new was started. */
  created: boolean;
  status: RunRecord['status'];
  /** What the store answered to the `signal` start sent (`duplicate` for a retried start). */
  signal?: SignalReceipt;
}

/** Options of `start`. */
export interface StartOptions {
  /** The run's id. @defaultValue derived from `idempotencyKey`, else a random UUID */
  runId?: string;
  /** Starting twice with the same key returns the first run: the run id is `${kind}:${name}:${key}`. */
  idempotencyKey?: string;
  /**
   * A scheduled start: the run is created `waiting` and no worker starts it before this time (on the workers'
   * clock). @defaultValue now
   */
  startAt?: Date | number;
  /**
   * Starts or signals in one call: the run is created when absent, then this signal is sent to it. With an
   * `idempotencyKey` on the signal a retried call acts once.
   */
  signal?: NewSignal;
  /** Whose data the run holds (a user or tenant id): see `NewRun.subject`. */
  subject?: string;
}

/** Options of `result`. */
export interface ResultOptions {
  /** How often the store is read while waiting. @defaultValue 250 */
  pollMs?: number;
  /**
   * Give up after this long with a retryable `RESULT_TIMEOUT` (the run goes on). A store that is down meanwhile
   * is waited through until then. @defaultValue no limit
   */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Options of `createClient`. */
export interface ClientOptions {
  store: DurableStore;
  /** @defaultValue systemClock */
  clock?: Clock;
}

/** Starts, signals, inspects, waits for, cancels and discards runs that workers perform. */
export interface CairnClient extends SignalSender, EventReader, StreamReader {
  /** Enqueues a run of an agent or planner for a worker; starting the same run id twice returns the first. */
  start<Input>(
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    target: { kind: string; name: string; definition: DurableDefinition<any, Input, any> },
    input: Input,
    options?: StartOptions,
  ): Promise<StartedRun>;
  /**
   * Enqueues a run by its definition's kind and name alone, as Temporal, DBOS and Inngest start one: the
   * client needs neither model nor tools. The worker that registers the definition makes the initial state
   * from `input` (an agent's prompt, a planner's goal) when it first claims the run.
   */
  start(
    target: { kind: string; name: string },
    input: JsonValue,
    options?: StartOptions,
  ): Promise<StartedRun>;
  /**
   * Waits for the run to end; returns its output, or throws its stored typed error. A `waiting` run has not
   * ended: it is waited for. Waits through retryable store errors (a restart, a failover); `timeoutMs` ends the
   * wait with `RESULT_TIMEOUT`.
   */
  result(runId: string, options?: ResultOptions): Promise<JsonValue>;
  get(runId: string): Promise<RunInfo | undefined>;
  list(filter?: RunFilter): Promise<RunInfo[]>;
  /**
   * Cancels a run: at once when no live worker holds it, else its holder cancels it at its next heartbeat.
   * Returns `cancelled`, `requested`, or `finished` when it had already ended. A child run is cancelled
   * with its root run (`INVALID_ARGUMENT` names it).
   */
  cancel(runId: string): Promise<'cancelled' | 'requested' | 'finished'>;
  /**
   * Deletes a run, with its child runs, when no live worker holds it (the store decides, on its own clock);
   * true when it existed. Throws `LeaseHeldError` while it is held, and `INVALID_ARGUMENT` for a child run,
   * which goes with its root.
   */
  discard(runId: string): Promise<boolean>;
  /**
   * Forgets a subject (its keys first, so every copy of its payloads is unreadable; then its runs, stopping the
   * live ones) or one run, leaving every other run as it is. Needs a store behind `protectPayloads` (with
   * `aesGcmCodec({ subjects })` for the keys); `INVALID_ARGUMENT` otherwise.
   */
  forget(target: ForgetTarget, options?: ForgetOptions): Promise<ForgetReport>;
  /**
   * Moves every stored payload to the codec and key the client's store writes with (after a key rotation), while
   * runs go on: see `reencrypt` in `protectPayloads`. Needs a store behind `protectPayloads` over a store that
   * can replace payloads (memory, Postgres, Redis); `INVALID_ARGUMENT` otherwise.
   */
  reencrypt(options?: ReencryptOptions): Promise<ReencryptReport>;
}

/** A child run is started, held, cancelled and deleted with its root: a client acts on the root. */
function refuseChild(record: RunRecord, action: 'start' | 'cancel' | 'discard'): void {
  if (record.rootRunId === null) return;
  throw new CairnError(
    'INVALID_ARGUMENT',
    `Run "${record.runId}" is a child run of "${record.rootRunId}": ${action} that run instead.`,
    { data: { runId: record.runId, rootRunId: record.rootRunId } },
  );
}

/** The wait of a scheduled start: its time, and no signal (signals sent meanwhile wait in its mailbox). */
function startWait(startAt: Date | number): RunWait {
  const until = startAt instanceof Date ? startAt.getTime() : startAt;
  if (typeof until !== 'number' || !Number.isFinite(until)) {
    throw new CairnError('INVALID_ARGUMENT', '`startAt` must be a valid Date or a time in ms.', {
      data: { reason: 'startAt invalid' },
    });
  }
  return { until, signals: [] };
}

/** Creates a client over a store: no worker runs in it, it only enqueues and observes. */
export function createClient(options: ClientOptions): CairnClient {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const owner = `client:${crypto.randomUUID()}`;
  const info = (record: RunRecord): RunInfo => runInfo(record, clock.now());
  const signals = signalSender(store);

  return {
    ...signals,
    ...eventReader(store, clock),
    ...streamReader(store, clock),
    async start(
      target: {
        kind: string;
        name: string;
        definition?: DurableDefinition<unknown, unknown, unknown>;
      },
      input: unknown,
      startOptions: StartOptions = {},
    ) {
      const runId = checkNewRunId(
        startOptions.runId ??
          (startOptions.idempotencyKey === undefined
            ? crypto.randomUUID()
            : `${target.kind}:${target.name}:${startOptions.idempotencyKey}`),
      );
      const { definition } = target;
      let snapshot: JsonValue;
      try {
        snapshot =
          definition === undefined
            ? unstartedRunSnapshot(input as JsonValue)
            : initialRunSnapshot(definition, input, runId);
      } catch (error) {
        throw new CairnError('INVALID_ARGUMENT', `The input of run "${runId}" is not JSON.`, {
          cause: error,
          data: { runId },
        });
      }
      const scheduled =
        startOptions.startAt === undefined ? undefined : startWait(startOptions.startAt);
      const subject =
        startOptions.subject === undefined ? undefined : checkSubject(startOptions.subject);
      const { created, run } = await store.create({
        runId,
        kind: target.kind,
        name: target.name,
        signature: definition?.signature ?? unstartedSignature,
        snapshot,
        ...(scheduled === undefined
          ? { status: 'queued' as const }
          : { status: 'waiting' as const, wait: scheduled }),
        ...(subject === undefined ? {} : { subject }),
      });
      if (!created) refuseChild(run, 'start');
      if (!created && (run.kind !== target.kind || run.name !== target.name)) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `Run "${runId}" already exists as ${run.kind} "${run.name}", not ${target.kind} "${target.name}".`,
          { data: { runId } },
        );
      }
      if (startOptions.signal === undefined) return { runId, created, status: run.status };
      const { name, payload, idempotencyKey } = startOptions.signal;
      const receipt = await signals.signal(runId, name, payload, {
        ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
      });
      return { runId, created, status: run.status, signal: receipt };
    },

    async result(runId, resultOptions = {}) {
      checkRunId(runId);
      const pollMs = resultOptions.pollMs ?? 250;
      const deadline =
        resultOptions.timeoutMs === undefined ? Infinity : clock.now() + resultOptions.timeoutMs;
      let status: RunStatus | undefined;
      for (;;) {
        let storeError: CairnError | undefined;
        let record: RunRecord | undefined;
        try {
          record = (await store.load(runId))?.run;
          if (record === undefined) throw new RunNotFoundError(runId);
        } catch (error) {
          // A store that is down for a while (a restart, a failover) is waited through, up to the timeout.
          if (!(isCairnError(error) && error.retryable)) throw error;
          storeError = error;
        }
        if (record?.status === 'completed') return record.output ?? null;
        if (record !== undefined && isTerminalStatus(record.status)) {
          throw deserializeError(
            record.error ??
              serializeError(
                new CairnError('RUN_FAILED', `Run "${runId}" ended ${record.status}.`),
              ),
          );
        }
        if (record !== undefined) status = record.status;
        if (clock.now() >= deadline) {
          throw new CairnError(
            'RESULT_TIMEOUT',
            `Run "${runId}" had not ended within ${resultOptions.timeoutMs} ms` +
              (storeError === undefined ? ` (${status}).` : `: ${storeError.message}`),
            {
              retryable: true,
              ...(storeError === undefined ? {} : { cause: storeError }),
              data: {
                runId,
                ...(status === undefined ? {} : { status }),
                ...(storeError === undefined ? {} : { storeError: storeError.code }),
              },
            },
          );
        }
        await clock.sleep(pollMs, resultOptions.signal);
      }
    },

    async get(runId) {
      checkRunId(runId);
      const record = (await store.load(runId))?.run;
      return record === undefined ? undefined : info(record);
    },

    async list(filter) {
      return (await store.list(filter)).map(info);
    },

    async cancel(runId) {
      checkRunId(runId);
      const record = (await store.load(runId))?.run;
      if (record === undefined) throw new RunNotFoundError(runId);
      refuseChild(record, 'cancel');
      if (isTerminalStatus(record.status)) return 'finished';
      await store.requestCancel(runId);
      // Nobody holds it: cancel it here, under a lease of our own.
      const lease = await store.acquire(runId, { owner, ttlMs: 10_000 });
      if (lease === undefined) {
        const now = (await store.load(runId))?.run;
        // Its holder (a worker our request woke, for a waiting run) may have ended it cancelled already.
        if (now?.status === 'cancelled') return 'cancelled';
        return now === undefined || isTerminalStatus(now.status) ? 'finished' : 'requested';
      }
      try {
        const error = new CairnError('RUN_CANCELLED', `Run "${runId}" was cancelled by a client.`, {
          data: { runId },
        });
        await store.updateStatus(lease, { status: 'cancelled', error: serializeError(error) });
      } finally {
        await store.release(lease);
      }
      return 'cancelled';
    },

    async forget(target, forgetOptions) {
      if (store.forget === undefined) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          'forget needs the client’s store behind protectPayloads: without a codec there are no keys to delete.',
        );
      }
      return store.forget(target, forgetOptions);
    },

    async reencrypt(reencryptOptions) {
      if (store.reencrypt === undefined) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          'reencrypt needs the client’s store behind protectPayloads, with the codec and keys to write with.',
        );
      }
      return store.reencrypt(reencryptOptions);
    },

    async discard(runId) {
      checkRunId(runId);
      const record = (await store.load(runId))?.run;
      if (record === undefined) return false;
      refuseChild(record, 'discard');
      return store.delete(runId);
    },
  };
}
