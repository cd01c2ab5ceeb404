import type {
  Checkpoint,
  DurableStore,
  Fence,
  JournalEntry,
  Lease,
  NewRun,
  RunFilter,
  RunRecord,
  StatusUpdate,
  StoredRun,
} from '../store/contract.js';
import type { StreamChunk, StreamReadOptions } from '../store/stream.js';
import type { NewSignal } from '../store/waits.js';
import { pendingApprovals } from '../agent/agent-signals.js';
import { CairnError, isCairnError } from '../errors.js';
import { PayloadUnreadableError } from './codec.js';
import { PayloadProtector, type ProtectOptions } from './sealed-parts.js';
import { storedSubject } from './sealed-snapshot.js';
import { forget } from './forget.js';
import { reencrypt } from './reencrypt.js';

export type { ProtectOptions };

const protectedMark = Symbol.for('@cairn/sdk/protected-store');

/** True for a store `protectPayloads` made (whichever copy of the package made it). */
export function isProtectedStore(store: DurableStore): boolean {
  return (store as unknown as Record<symbol, unknown>)[protectedMark] === true;
}

/**
 * A store that encodes every payload it is given before the store underneath sees it, and decodes every payload
 * it reads: snapshots (state, conversation, history), journal outcomes, run input and output, errors' messages
 * and data, signal payloads, wait details and stream chunks. Ids, names, statuses, times, epochs, counts, an
 * error's code and what a store checks a decision by stay plaintext, so listing, claiming and fencing work as
 * before. Give the same codec to every worker and client of the store.
 *
 * A payload that cannot be decoded (plaintext where a codec is set, changed, copied from another run or place,
 * a codec or key not at hand) is `PayloadUnreadableError`: `load` throws it, `list` shows the run as
 * `unreadable`, a batch claim hands the run over unread (its holder meets the error and gives it back).
 */
export function protectPayloads<Store extends DurableStore>(
  store: Store,
  options: ProtectOptions,
): DurableStore & { close?(): Promise<void> } {
  if (isProtectedStore(store)) {
    // Encoding twice would make every read of the inner codec's rows look like plaintext (not-encoded).
    throw new CairnError(
      'INVALID_ARGUMENT',
      'This store is already behind protectPayloads: give the codec once, to the store underneath.',
    );
  }
  const protector = new PayloadProtector(options);
  // The incarnation of runs written or read here, so a stream read can check its chunks' binding without
  // loading the run first.
  const incarnations = new Map<string, string>();
  const remember = (runId: string, incarnation: string) => {
    if (incarnations.size > 10_000) incarnations.clear();
    incarnations.set(runId, incarnation);
  };
  const openLease = async (lease: Lease): Promise<Lease> => {
    remember(lease.runId, lease.incarnation);
    if (lease.claimed === undefined) return lease;
    try {
      return { ...lease, claimed: await protector.openStoredRun(lease.claimed) };
    } catch (error) {
      if (!(error instanceof PayloadUnreadableError)) throw error;
      // Handed over unread: its holder loads it, meets the error and gives the run back.
      const { claimed: _unread, ...unread } = lease;
      return unread;
    }
  };
  const sealCheckpoint = async (fence: Fence, checkpoint: Checkpoint): Promise<Checkpoint> => {
    const { runId, incarnation } = fence;
    const sealed: Checkpoint = {
      ...checkpoint,
      snapshot: await protector.sealSnapshot(checkpoint.snapshot, runId, incarnation),
    };
    if (checkpoint.output !== undefined)
      sealed.output = await protector.sealOutput(checkpoint.output, runId, incarnation);
    if (checkpoint.error !== undefined)
      sealed.error = await protector.sealError(checkpoint.error, runId, incarnation);
    if (checkpoint.wait !== undefined)
      sealed.wait = await protector.sealWait(checkpoint.wait, runId, incarnation);
    if (checkpoint.stream !== undefined)
      sealed.stream = await protector.sealChunks(checkpoint.stream, runId, incarnation);
    return sealed;
  };
  // Whose data a run holds, read from its stored snapshot when this store has not read or written it yet: what
  // is written for it must be encrypted for that subject, never under the shared key by mistake.
  const subjectFor = async (runId: string): Promise<string | undefined> => {
    if (!protector.knowsRun(runId)) {
      const stored = await store.load(runId);
      const subject = storedSubject(stored?.run.snapshot ?? null) ?? null;
      protector.learnRun(runId, subject, stored?.run.name);
    }
    return protector.subjectOf(runId);
  };
  const incarnationOf = async (runId: string): Promise<string | undefined> => {
    const known = incarnations.get(runId);
    if (known !== undefined) return known;
    const stored = await store.load(runId);
    if (stored !== undefined) remember(runId, stored.run.incarnation);
    return stored?.run.incarnation;
  };

  // A decision refused for naming other arguments says which ones the run waits with: the hash as the run
  // computed it, not the keyed one the store compared (`argsHashKey`).
  const withWaitedArgsHash = async (error: unknown, runId: string): Promise<unknown> => {
    if (!isCairnError(error) || error.data.reason !== 'other arguments') return error;
    const wait = (await protectedStore.load(runId).catch(() => undefined))?.run.wait;
    const waited = pendingApprovals(wait?.detail).find((call) => call.callId === error.data.callId);
    return new CairnError(error.code, error.message, {
      data: { ...error.data, argsHash: waited?.argsHash ?? null },
      cause: error,
    });
  };

  const protectedStore: DurableStore = {
    async create(run: NewRun) {
      // A child run holds its parent's subject's data: it is encrypted for the same subject.
      const { subject: given, ...rest } = run;
      const subject =
        given ?? (run.parent === undefined ? undefined : await subjectFor(run.parent.runId));
      protector.learnRun(run.runId, subject ?? null, run.name);
      const sealed: NewRun = {
        ...rest,
        snapshot:
          run.snapshot === null ? null : await protector.sealSnapshot(run.snapshot, run.runId, ''),
      };
      if (run.wait !== undefined) sealed.wait = await protector.sealWait(run.wait, run.runId, '');
      const result = await store.create(sealed);
      remember(run.runId, result.run.incarnation);
      return { created: result.created, run: await protector.openRecord(result.run) };
    },
    async load(runId: string): Promise<StoredRun | undefined> {
      const stored = await store.load(runId);
      if (stored === undefined) return undefined;
      remember(runId, stored.run.incarnation);
      return protector.openStoredRun(stored);
    },
    async save(fence, checkpoint) {
      await subjectFor(fence.runId);
      return store.save(fence, await sealCheckpoint(fence, checkpoint));
    },
    async append(fence, entries: readonly JournalEntry[], stream?: readonly StreamChunk[]) {
      await subjectFor(fence.runId);
      const sealed = await protector.sealEntries(entries, fence.runId, fence.incarnation);
      if (stream === undefined) return store.append(fence, sealed);
      return store.append(
        fence,
        sealed,
        await protector.sealChunks(stream, fence.runId, fence.incarnation),
      );
    },
    async updateStatus(fence, update: StatusUpdate) {
      await subjectFor(fence.runId);
      const sealed =
        update.error === undefined
          ? update
          : {
              ...update,
              error: await protector.sealError(update.error, fence.runId, fence.incarnation),
            };
      return store.updateStatus(fence, sealed);
    },
    async list(filter?: RunFilter): Promise<RunRecord[]> {
      const records = await store.list(filter);
      const opened: RunRecord[] = [];
      for (const record of records) {
        try {
          opened.push(await protector.openRecord(record));
        } catch (error) {
          if (!(error instanceof PayloadUnreadableError)) throw error;
          const { output: _output, error: _error, ...rest } = record;
          opened.push({ ...rest, snapshot: null, wait: null, unreadable: error.message });
        }
      }
      return opened;
    },
    async signal(runId: string, signal: NewSignal) {
      await subjectFor(runId);
      const payload = await protector.sealSignalPayload(runId, signal.name, signal.payload);
      try {
        return await protector.openReceipt(
          runId,
          await store.signal(runId, { ...signal, payload }),
        );
      } catch (error) {
        throw await withWaitedArgsHash(error, runId);
      }
    },
    async mailbox(runId: string) {
      return protector.openSignals(runId, await store.mailbox(runId));
    },
    delete: (runId) => store.delete(runId),
    requestCancel: (runId) => store.requestCancel(runId),
    prune: (options) => store.prune(options),
    async acquire(runId, options) {
      const lease = await store.acquire(runId, options);
      return lease === undefined ? undefined : openLease(lease);
    },
    renew: (lease, ttlMs) => store.renew(lease, ttlMs),
    release: (lease) => store.release(lease),
    async adopt(childRunId, parent) {
      const lease = await store.adopt(childRunId, parent);
      return lease === undefined ? undefined : openLease(lease);
    },
    claimable: (options) => store.claimable(options),
    nextWake: (definitions, after) => store.nextWake(definitions, after),
  };
  if (store.claim !== undefined) {
    const claim = store.claim.bind(store);
    protectedStore.claim = async (options) => {
      const leases = await claim(options);
      const opened: Lease[] = [];
      for (const lease of leases) opened.push(await openLease(lease));
      return opened;
    };
  }
  if (store.prepare !== undefined) protectedStore.prepare = store.prepare.bind(store);
  if (store.subscribe !== undefined) protectedStore.subscribe = store.subscribe.bind(store);
  if (store.streamsWithWrites !== undefined)
    Object.assign(protectedStore, { streamsWithWrites: store.streamsWithWrites });
  if (store.appendStream !== undefined && store.readStream !== undefined) {
    const appendStream = store.appendStream.bind(store);
    const readStream = store.readStream.bind(store);
    protectedStore.appendStream = async (fence, chunks) => {
      await subjectFor(fence.runId);
      return appendStream(
        fence,
        await protector.sealChunks(chunks, fence.runId, fence.incarnation),
      );
    };
    protectedStore.readStream = async (runId: string, options?: StreamReadOptions) => {
      const chunks = await readStream(runId, options);
      if (chunks.length === 0) return chunks;
      const incarnation = await incarnationOf(runId);
      if (incarnation === undefined) return [];
      try {
        return await protector.openChunks(chunks, runId, incarnation);
      } catch (error) {
        // The run may have been deleted and created again since its incarnation was learned here: ask once.
        if (!(error instanceof PayloadUnreadableError)) throw error;
        incarnations.delete(runId);
        const current = await incarnationOf(runId);
        if (current === undefined || current === incarnation) throw error;
        return protector.openChunks(chunks, runId, current);
      }
    };
  }
  if (store.streamPosition !== undefined)
    protectedStore.streamPosition = store.streamPosition.bind(store);
  protectedStore.forget = (target, forgetOptions) =>
    forget(store, protector.sealer, target, forgetOptions);
  protectedStore.reencrypt = (reencryptOptions) => reencrypt(store, options, reencryptOptions);
  Object.defineProperty(protectedStore, protectedMark, { value: true });
  // A store that opened its own connections ends them on `close`: whoever closes the protected store (a worker
  // module's loader, a command) closes the store underneath.
  const { close } = store as { close?: () => Promise<void> };
  if (typeof close === 'function') {
    return Object.assign(protectedStore, { close: () => close.call(store) });
  }
  return protectedStore;
}
