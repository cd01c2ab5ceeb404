import {
  CairnError,
  isCairnError,
  snapshotInvalidError,
  type JournalEntry,
  type JsonValue,
  type RunRecord,
  type RunStatus,
  type RunWait,
  type SerializedError,
} from '@cairn/sdk';

/** The fields of a run hash, from HGETALL's flat `[field, value, ...]` reply (or a map, with RESP3 maps). */
export function hashFields(reply: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2)
      fields.set(String(reply[i]), String(reply[i + 1]));
  } else if (typeof reply === 'object' && reply !== null) {
    for (const [key, value] of Object.entries(reply)) fields.set(key, String(value));
  }
  return fields;
}

/** A JSON field of a run, or `SNAPSHOT_INVALID` when it was changed behind the store's back. */
function parseField(text: string, runId: string | undefined, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw snapshotInvalidError(runId ?? '?', `its ${what} is not JSON`);
  }
}

function required(fields: Map<string, string>, name: string): string {
  const value = fields.get(name);
  if (value === undefined) {
    throw new CairnError(
      'STORE_FAILED',
      `A Cairn run hash in Redis has no "${name}" field: the key was written by something else.`,
      { data: { field: name, runId: fields.get('runId') ?? null } },
    );
  }
  return value;
}

/** The root run that holds a child run, from the child's hash; undefined for a run that is not a child. */
export function rootOf(
  fields: Map<string, string>,
): { runId: string; incarnation: string } | undefined {
  const runId = fields.get('rootId');
  const incarnation = fields.get('rootInc');
  return runId === undefined || incarnation === undefined ? undefined : { runId, incarnation };
}

/**
 * The `RunRecord` a run hash holds. A child run is held by its root's lease, so its `owner` and `leaseUntil`
 * are read from `root`, the root's hash fields (`incarnation`, `owner`, `leaseUntil`), when it is still the
 * incarnation the child names. A JSON field changed behind the store's back is `SNAPSHOT_INVALID`, or, with
 * `malformed: 'mark'` (a listing, which must not fail for every run because of one), a record whose snapshot
 * is null, marked `unreadable` with why.
 */
export function toRecord(
  fields: Map<string, string>,
  root?: Map<string, string>,
  malformed: 'throw' | 'mark' = 'throw',
): RunRecord {
  if (malformed === 'mark') {
    try {
      return toRecord(fields, root);
    } catch (error) {
      if (!isCairnError(error) || error.code !== 'SNAPSHOT_INVALID') throw error;
      const bare = new Map(fields);
      for (const field of ['wait', 'output', 'error']) bare.delete(field);
      bare.set('snapshot', 'null');
      return { ...toRecord(bare, root), unreadable: error.message };
    }
  }
  const rootRun = rootOf(fields);
  const leaseFields = rootRun === undefined ? fields : root;
  const current = rootRun === undefined || leaseFields?.get('incarnation') === rootRun.incarnation;
  const owner = current ? leaseFields?.get('owner') : undefined;
  const leaseUntil = leaseFields?.get('leaseUntil');
  const parentId = fields.get('parentId');
  const wait = fields.get('wait');
  const record: RunRecord = {
    runId: required(fields, 'runId'),
    incarnation: required(fields, 'incarnation'),
    kind: required(fields, 'kind'),
    name: required(fields, 'name'),
    signature: required(fields, 'signature'),
    status: required(fields, 'status') as RunStatus,
    epoch: Number(required(fields, 'epoch')),
    snapshot: parseField(
      required(fields, 'snapshot'),
      fields.get('runId'),
      'snapshot',
    ) as JsonValue | null,
    wait: wait === undefined ? null : (parseField(wait, fields.get('runId'), 'wait') as RunWait),
    owner: owner ?? null,
    leaseUntil: owner !== undefined && leaseUntil !== undefined ? Number(leaseUntil) : null,
    recoveries: Number(fields.get('recoveries') ?? 0),
    stalls: Number(fields.get('stalls') ?? 0),
    cancelRequested: fields.get('cancel') === '1',
    parent:
      parentId === undefined
        ? null
        : { runId: parentId, incarnation: required(fields, 'parentInc') },
    rootRunId: rootRun?.runId ?? null,
    createdAt: Number(required(fields, 'createdAt')),
    updatedAt: Number(required(fields, 'updatedAt')),
  };
  const output = fields.get('output');
  if (output !== undefined) record.output = parseField(output, record.runId, 'output') as JsonValue;
  const error = fields.get('error');
  if (error !== undefined)
    record.error = parseField(error, record.runId, 'error') as SerializedError;
  return record;
}

/** The journal entries of a run, from its sorted set (already in seq order). */
export function toJournal(reply: unknown, runId: string): JournalEntry[] {
  return Array.isArray(reply)
    ? reply.map((entry) => parseField(String(entry), runId, 'journal') as JournalEntry)
    : [];
}
