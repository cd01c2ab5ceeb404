import {
  CairnError,
  type JournalEntry,
  type JsonValue,
  type RunRecord,
  type RunStatus,
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

/** The `RunRecord` a run hash holds. */
export function toRecord(fields: Map<string, string>): RunRecord {
  const owner = fields.get('owner');
  const leaseUntil = fields.get('leaseUntil');
  const record: RunRecord = {
    runId: required(fields, 'runId'),
    kind: required(fields, 'kind'),
    name: required(fields, 'name'),
    signature: required(fields, 'signature'),
    status: required(fields, 'status') as RunStatus,
    epoch: Number(required(fields, 'epoch')),
    snapshot: JSON.parse(required(fields, 'snapshot')) as JsonValue | null,
    owner: owner ?? null,
    leaseUntil: owner !== undefined && leaseUntil !== undefined ? Number(leaseUntil) : null,
    recoveries: Number(fields.get('recoveries') ?? 0),
    cancelRequested: fields.get('cancel') === '1',
    createdAt: Number(required(fields, 'createdAt')),
    updatedAt: Number(required(fields, 'updatedAt')),
  };
  const output = fields.get('output');
  if (output !== undefined) record.output = JSON.parse(output) as JsonValue;
  const error = fields.get('error');
  if (error !== undefined) record.error = JSON.parse(error) as SerializedError;
  return record;
}

/** The journal entries of a run, from its list. */
export function toJournal(reply: unknown): JournalEntry[] {
  return Array.isArray(reply)
    ? reply.map((entry) => JSON.parse(String(entry)) as JournalEntry)
    : [];
}
