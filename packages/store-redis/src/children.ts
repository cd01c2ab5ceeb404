import {
  CairnError,
  RunNotFoundError,
  type Lease,
  type RunRecord,
  type RunStatus,
} from '@cairn/sdk';
import { readFields, runScript, serverNow, type StoreContext } from './context.js';
import { deleteRun } from './lua/delete.js';
import { linkChild } from './lua/link-child.js';
import { bucketOf } from './keys.js';
import { rootOf, toRecord } from './record.js';

// A child run's keys carry its own hash tag, so on Cluster its scripts cannot see its parent or root: what
// needs both runs happens here in separate steps, each safe on its own.

/** The root whose lease holds a child run, as named in the child's hash. */
export interface RootRef {
  runId: string;
  incarnation: string;
}

/**
 * Records from run hashes, oldest first as given. A child run is held by its root's lease, so its `owner` and
 * `leaseUntil` come from its root's hash (read once per root).
 */
export async function toRecords(
  ctx: StoreContext,
  hashes: readonly Map<string, string>[],
  malformed: 'throw' | 'mark' = 'throw',
): Promise<RunRecord[]> {
  const roots = new Map<string, Promise<Map<string, string>>>();
  let now: Promise<number> | undefined;
  return Promise.all(
    hashes.map(async (fields) => {
      const root = rootOf(fields);
      let holding = fields;
      let record: RunRecord;
      if (root === undefined) record = toRecord(fields, undefined, malformed);
      else {
        let read = roots.get(root.runId);
        if (read === undefined) {
          read = readFields(ctx, root.runId, ['incarnation', 'owner', 'leaseUntil', 'holder']);
          roots.set(root.runId, read);
        }
        holding = await read;
        record = toRecord(fields, holding, malformed);
      }
      const holder = holding.get('holder');
      if (record.owner === null || holder === undefined || holder === '') return record;
      const gone = await holderGone(
        ctx,
        root?.runId ?? record.runId,
        holder,
        () => (now ??= serverNow(ctx)),
      );
      return gone === undefined ? record : { ...record, holderGone: gone };
    }),
  );
}

/**
 * Whether the store instance holding a run is gone: its liveness in the run's bucket ended (on the server's
 * clock). Undefined when it keeps none there (lease-only liveness, or its entry was cleared by a takeover).
 */
async function holderGone(
  ctx: StoreContext,
  holdingRunId: string,
  holder: string,
  now: () => Promise<number>,
): Promise<boolean | undefined> {
  const score = await ctx.gate.call('read a liveness', (client) =>
    client.zscore(ctx.keys.live(bucketOf(holdingRunId)), holder),
  );
  if (score === null || score === undefined) return undefined;
  return Number(score) < (await now());
}

/** True while `root` exists at its incarnation and `epoch`: a child's write under it may still land. */
export async function rootCurrent(
  ctx: StoreContext,
  root: RootRef,
  epoch: number,
): Promise<boolean> {
  const fields = await readFields(ctx, root.runId, ['incarnation', 'epoch']);
  return fields.get('incarnation') === root.incarnation && fields.get('epoch') === String(epoch);
}

/**
 * True while `parent` is a current lease: its root still has the incarnation, epoch and owner it names, and
 * the parent (a child itself, below the root) the epoch. What `adopt` checks before it claims a child.
 */
export async function parentLeaseCurrent(
  ctx: StoreContext,
  parent: Lease,
  root: RootRef,
): Promise<boolean> {
  const [rootFields, parentFields] = await Promise.all([
    readFields(ctx, root.runId, ['incarnation', 'epoch', 'owner']),
    readFields(ctx, parent.runId, ['incarnation', 'epoch']),
  ]);
  const epoch = String(parent.epoch);
  return (
    rootFields.get('incarnation') === root.incarnation &&
    rootFields.get('epoch') === epoch &&
    rootFields.get('owner') === parent.owner &&
    parentFields.get('incarnation') === parent.incarnation &&
    parentFields.get('epoch') === epoch
  );
}

/** True while a live lease holds `root` (at its incarnation), on the server's clock. */
async function rootHeld(ctx: StoreContext, root: RootRef): Promise<boolean> {
  const [fields, now] = await Promise.all([
    readFields(ctx, root.runId, ['incarnation', 'owner', 'leaseUntil']),
    serverNow(ctx),
  ]);
  return (
    fields.get('incarnation') === root.incarnation &&
    fields.has('owner') &&
    Number(fields.get('leaseUntil')) > now
  );
}

/**
 * On Cluster, before a child run is created: adds it to its parent's children while the parent exists at the
 * incarnation named, and returns the root the child will be held by. Throws `RunNotFoundError` otherwise.
 */
export async function linkToParent(
  ctx: StoreContext,
  childRunId: string,
  parent: RootRef,
): Promise<[string, string]> {
  const reply = await runScript(ctx, 'register a child run', linkChild, parent.runId, [
    parent.incarnation,
    childRunId,
  ]);
  if (reply[0] !== 'ok') throw new RunNotFoundError(parent.runId);
  return [String(reply[1]), String(reply[2])];
}

/** How `deleteTree` decides: `delete` on the lease alone, `prune` also on status and age. */
export type DeleteMode =
  { mode: 'delete' } | { mode: 'prune'; before: string; statuses: readonly RunStatus[] };

/**
 * Deletes a run unless a live lease holds it (a child: its root's), then its child runs. On a single node the
 * lease check sees the root in the same script; on Cluster the root is read just before. The children go in
 * separate scripts after the run: a crash in between leaves children whose parent incarnation is gone, which
 * nobody can adopt and which creating them again under a new incarnation replaces.
 */
export async function deleteTree(
  ctx: StoreContext,
  runId: string,
  how: DeleteMode,
): Promise<'deleted' | 'missing' | 'kept' | 'held'> {
  // Optimistic: a run is assumed not to be a child until its script says otherwise ('moved').
  let link: (RootRef & { parentId: string }) | undefined;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const expected = link?.runId ?? '';
    const args =
      how.mode === 'delete'
        ? ['delete', expected]
        : ['prune', expected, how.before, runId, ...how.statuses];
    if (link !== undefined && ctx.cluster && (await rootHeld(ctx, link)))
      return how.mode === 'delete' ? 'held' : 'kept';
    const related =
      link === undefined
        ? undefined
        : ([ctx.keys.run(link.runId).run, ctx.keys.run(link.parentId).children] as const);
    const reply = await runScript(ctx, `${how.mode} a run`, deleteRun, runId, args, related);
    const [outcome] = reply;
    if (outcome === 'moved') {
      const [, root, incarnation, parentId] = reply.map(String);
      link =
        root === '' ? undefined : { runId: root!, incarnation: incarnation!, parentId: parentId! };
      continue;
    }
    if (outcome === 'deleted') {
      if (ctx.cluster && link !== undefined) {
        const siblings = ctx.keys.run(link.parentId).children;
        await ctx.gate.call('unlink a child run', (client) => client.srem(siblings, runId));
      }
      await deleteChildren(ctx, runId, String(reply[2]), reply[3]);
    }
    if (outcome === 'deleted' || outcome === 'missing' || outcome === 'kept' || outcome === 'held')
      return outcome;
    throw new CairnError('STORE_FAILED', `Unexpected reply "${outcome}" to delete run "${runId}".`);
  }
  throw new CairnError(
    'STORE_FAILED',
    `Run "${runId}" was created again under another root during each attempt to delete it.`,
    { data: { runId } },
  );
}

/** Deletes the children of a run just deleted (and theirs), each only while it is still that run's child. */
export async function deleteChildren(
  ctx: StoreContext,
  parentId: string,
  parentIncarnation: string,
  ids: unknown,
): Promise<void> {
  if (!Array.isArray(ids)) return;
  await Promise.all(
    ids.map(async (value) => {
      const id = String(value);
      const reply = await runScript(ctx, 'delete a child run', deleteRun, id, [
        'cascade',
        parentId,
        parentIncarnation,
      ]);
      if (reply[0] !== 'deleted') return;
      await deleteChildren(ctx, id, String(reply[2]), reply[3]);
    }),
  );
}
