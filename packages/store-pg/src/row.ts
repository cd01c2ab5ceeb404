import type { JsonValue, RunRecord, RunStatus, SerializedError } from '@cairn/sdk';
import type { Names } from './names.js';
import { mergeSnapshot } from './snapshot-items.js';

/** Milliseconds since the epoch of a timestamptz column, as float8 so it arrives as a number. */
export function millis(column: string): string {
  return `floor(extract(epoch FROM ${column}) * 1000)::float8`;
}

/** How many columns `runColumns` selects. */
export const runColumnCount = 17;

/**
 * The select list every query that returns a `RunRecord` uses, in the order `decodeRun` reads, for the runs
 * table under `alias`: it gathers the snapshot's long arrays back from `snapshot_items`.
 */
export function runColumns(names: Names, alias: string): string {
  const c = (column: string) => `${alias}.${column}`;
  return [
    c('run_id'),
    c('kind'),
    c('name'),
    c('signature'),
    c('status'),
    `${c('epoch')}::float8`,
    `${c('snapshot')}::text`,
    `${c('output')}::text`,
    `${c('error')}::text`,
    c('owner'),
    millis(c('lease_until')),
    millis(c('created_at')),
    millis(c('updated_at')),
    c('recoveries'),
    c('cancel_requested'),
    `${c('snapshot_version')}::float8`,
    `(SELECT coalesce(jsonb_object_agg(g.path, g.items), '{}'::jsonb)::text
        FROM (SELECT s.path, jsonb_agg(s.item ORDER BY s.idx) AS items
                FROM ${names.snapshotItems} s WHERE s.run_id = ${c('run_id')} GROUP BY s.path) g)`,
  ].join(', ');
}

/** The snapshot version and long arrays a row carried, for the store's record of what is stored. */
export function storedItemsOf(row: readonly unknown[]): {
  version: number;
  arrays: Record<string, JsonValue[]>;
} {
  return {
    version: row[15] as number,
    arrays: JSON.parse(row[16] as string) as Record<string, JsonValue[]>,
  };
}

function mergeSnapshotOf(row: readonly unknown[]): JsonValue | null {
  const inline = parseJson(row[6]);
  const { arrays } = storedItemsOf(row);
  return inline === null || Object.keys(arrays).length === 0
    ? inline
    : mergeSnapshot(inline, arrays);
}

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
    snapshot: mergeSnapshotOf(row),
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
