/**
 * The store commands read through (`runCli`'s client): every answer that holds a run's payloads goes through
 * `encrypted-view.ts`, so whatever a command prints or `cairn ui` serves shows "(encrypted)" where a codec encoded
 * a value that this command cannot decode (no `--codec`), never its ciphertext. Through the codec, payloads are
 * decoded before they get here, and pass as they are. Writes reach the store as they are given; the commands that
 * would write a payload into an encrypted run refuse it first (`refuseEncryptedWrite`). `runs resume` performs a
 * run on the store itself, not through here: the runtime must read what was stored.
 */
import type { DurableStore, Lease } from '@cairn/sdk';
import {
  hideChunk,
  hideReceipt,
  hideRecordPayloads,
  hideSignal,
  hideStoredRunPayloads,
} from './encrypted-view.js';

/** `store`, with what it answers shown as a reader without the codec may see it. */
export function hideEncryptedPayloads(store: DurableStore): DurableStore {
  const hideLease = (lease: Lease | undefined): Lease | undefined =>
    lease?.claimed === undefined
      ? lease
      : { ...lease, claimed: hideStoredRunPayloads(lease.claimed) };
  const shown: DurableStore = {
    async create(run) {
      const created = await store.create(run);
      return { ...created, run: hideRecordPayloads(created.run) };
    },
    async load(runId) {
      const stored = await store.load(runId);
      return stored === undefined ? undefined : hideStoredRunPayloads(stored);
    },
    async list(filter) {
      return (await store.list(filter)).map(hideRecordPayloads);
    },
    async signal(runId, signal) {
      return hideReceipt(await store.signal(runId, signal));
    },
    async mailbox(runId) {
      return (await store.mailbox(runId)).map(hideSignal);
    },
    async acquire(runId, options) {
      return hideLease(await store.acquire(runId, options));
    },
    async adopt(childRunId, parent) {
      return hideLease(await store.adopt(childRunId, parent));
    },
    save: (fence, checkpoint) => store.save(fence, checkpoint),
    append: (fence, entries, stream) =>
      stream === undefined ? store.append(fence, entries) : store.append(fence, entries, stream),
    updateStatus: (fence, update) => store.updateStatus(fence, update),
    delete: (runId) => store.delete(runId),
    requestCancel: (runId) => store.requestCancel(runId),
    prune: (options) => store.prune(options),
    renew: (lease, ttlMs) => store.renew(lease, ttlMs),
    release: (lease) => store.release(lease),
    claimable: (options) => store.claimable(options),
    nextWake: (definitions, after) => store.nextWake(definitions, after),
  };
  // The optional parts a store has, it keeps: the runtime and the client look for them.
  if (store.claim !== undefined) {
    const claim = store.claim.bind(store);
    shown.claim = async (options) =>
      (await claim(options)).map((lease) => hideLease(lease) as Lease);
  }
  if (store.readStream !== undefined) {
    const readStream = store.readStream.bind(store);
    shown.readStream = async (runId, options) => (await readStream(runId, options)).map(hideChunk);
  }
  if (store.appendStream !== undefined) shown.appendStream = store.appendStream.bind(store);
  if (store.streamPosition !== undefined) shown.streamPosition = store.streamPosition.bind(store);
  if (store.prepare !== undefined) shown.prepare = store.prepare.bind(store);
  if (store.subscribe !== undefined) shown.subscribe = store.subscribe.bind(store);
  if (store.streamsWithWrites !== undefined)
    Object.assign(shown, { streamsWithWrites: store.streamsWithWrites });
  return shown;
}
