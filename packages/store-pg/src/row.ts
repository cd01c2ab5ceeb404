import type { JsonValue, RunRecord, RunStatus, SerializedError } from '@cairn/sdk';

/** Milliseconds since the epoch of a timestamptz column, as float8 so it arrives as a number. */
export function millis(column: string): string {
  return `floor(extract(epoch FROM ${column}) * 1000)::float8`;
}

/** The select list every query that returns a `RunRecord` uses, in the order `decodeRun` reads. */
export const runColumnCount = 15;

export const runColumns = [
  'run_id',
  'kind',
  'name',
  'signature',
  'status',
  'epoch::float8',
  'snapshot::text',
  'output::text',
  'error::text',
  'owner',
  millis('lease_until'),
  millis('created_at'),
  millis('updated_at'),
  'recoveries',
  'cancel_requested',
].join(', ');

function parseJson(text: unknown): JsonValue | null {
  return typeof text === 'string' ? (JSON.parse(text) as JsonValue) : null;
}

/** Builds a `RunRecord` from a row selected with `runColumns`. */
export function decodeRun(row: readonly unknown[]): RunRecord {
  const record: RunRecord = {
    runId: row[0] as string,
    kind: row[1] as string,
    name: row[2] as string,
    signature: row[3] as string,
    status: row[4] as RunStatus,
    epoch: row[5] as number,
    snapshot: parseJson(row[6]),
    owner: (row[9] as string | null) ?? null,
    leaseUntil: (row[10] as number | null) ?? null,
    createdAt: row[11] as number,
    updatedAt: row[12] as number,
    recoveries: row[13] as number,
    cancelRequested: row[14] as boolean,
  };
  if (typeof row[7] === 'string') record.output = parseJson(row[7]) as JsonValue;
  if (typeof row[8] === 'string') record.error = parseJson(row[8]) as unknown as SerializedError;
  return record;
}
