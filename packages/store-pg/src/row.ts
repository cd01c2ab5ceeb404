import {
  snapshotInvalidError,
  isCairnError,
  type JournalEntry,
  type JsonValue,
  type RunRecord,
  type RunStatus,
  type RunSignal,
  type RunWait,
  type SerializedError,
} from '@cairn/sdk';
import type { Names } from './names.js';
import {
  arraysOfRows,
  checkItemCounts,
  mergeSnapshot,
  type ChunkRow,
  type LoadedArray,
} from './snapshot-rows.js';

/** Milliseconds since the epoch of a timestamptz column, as float8 so it arrives as a number. */
export function millis(column: string): string {
  return `floor(extract(epoch FROM ${column}) * 1000)::float8`;
}

/** The statuses a run never leaves, as a SQL list. */
export const finalStatusList = `('completed', 'failed', 'cancelled', 'dead_lettered')`;

/**
 * The columns `runColumns` selects, in order: `decodeRun` reads them by these names, so adding one is one
 * edit here and one in the select list.
 */
const columns = [
  'run_id',
  'incarnation',
  'kind',
  'name',
  'signature',
  'status',
  'epoch',
  'snapshot',
  'output',
  'error',
  'owner',
  'lease_until',
  'created_at',
  'updated_at',
  'recoveries',
  'stalls',
  'cancel_requested',
  'parent_run_id',
  'parent_incarnation',
  'root_run_id',
  'snapshot_version',
  'snapshot_items',
  'wait',
] as const;
const at = Object.fromEntries(columns.map((name, index) => [name, index])) as Record<
  (typeof columns)[number],
  number
>;

/** When the run of a row selected with `runColumns` was created (ms): read without decoding the rest. */
export function createdAtOf(row: readonly unknown[]): number {
  return row[at.created_at] as number;
}

/** How many columns `runColumns` selects. */
export const runColumnCount = columns.length;

/**
 * The select list every query that returns a `RunRecord` uses, in the order `decodeRun` reads, for the runs
 * table under `alias`: it gathers the snapshot's long arrays back from `snapshot_chunks`, and shows a child
 * run's lease as its root's (a child is held exactly while its root is).
 */
export function runColumns(names: Names, alias: string): string {
  const c = (column: string) => `${alias}.${column}`;
  const ofRoot = (column: string) =>
    `CASE WHEN ${c('root_run_id')} IS NULL THEN ${c(column)}
          ELSE (SELECT h.${column} FROM ${names.runs} h WHERE h.run_id = ${c('root_run_id')}) END`;
  const select: Record<(typeof columns)[number], string> = {
    run_id: c('run_id'),
    incarnation: `${c('created_seq')}::text`,
    kind: c('kind'),
    name: c('name'),
    signature: c('signature'),
    status: c('status'),
    epoch: `${c('epoch')}::float8`,
    snapshot: `${c('snapshot')}::text`,
    output: `${c('output')}::text`,
    error: `${c('error')}::text`,
    owner: ofRoot('owner'),
    lease_until: millis(`(${ofRoot('lease_until')})`),
    created_at: millis(c('created_at')),
    updated_at: millis(c('updated_at')),
    recoveries: c('recoveries'),
    stalls: c('stalls'),
    cancel_requested: c('cancel_requested'),
    parent_run_id: c('parent_run_id'),
    parent_incarnation: `${c('parent_incarnation')}::text`,
    root_run_id: c('root_run_id'),
    snapshot_version: `${c('snapshot_version')}::float8`,
    // Each row's items as a JSON string, parsed on its own: one row that is not JSON spoils only its own run.
    snapshot_items: `(SELECT '[' || coalesce(string_agg(
                        '[' || to_json(s.path)::text || ',' || s.idx || ',' || to_json(s.items)::text || ']', ','
                        ORDER BY s.path, s.idx), '') || ']'
        FROM ${names.snapshotChunks} s WHERE s.run_seq = ${c('created_seq')})`,
    // The wait as the JSON text of a RunWait, its detail in the exact bytes it was written as.
    wait: `CASE WHEN ${c('status')} = 'waiting' THEN
             '{"until":' || coalesce(${c('wait_until')}::text, 'null')
             || ',"signals":' || coalesce(to_json(${c('wait_signals')})::text, '[]')
             || coalesce(',"detail":' || ${c('wait_detail')}, '') || '}' END`,
  };
  return columns.map((name) => select[name]).join(', ');
}

/**
 * Whether the session of the run's holder (its root's, for a child) is gone, for the runs table under `alias`: its
 * row says dead, is gone, or its lock is free (`pg_try_advisory_xact_lock` takes it and lets go at the
 * statement's end, as a claimer's probe does; a dead session's key is never used again). Null when nobody holds
 * the run or its holder keeps no session (lease-only liveness). For the reads a client makes (`load`, `list`),
 * never for claims.
 */
export function holderGoneColumn(names: Names, alias: string): string {
  const session = `CASE WHEN ${alias}.root_run_id IS NULL THEN ${alias}.holder_session
          ELSE (SELECT h.holder_session FROM ${names.runs} h WHERE h.run_id = ${alias}.root_run_id) END`;
  return `(SELECT CASE WHEN k.id IS NULL THEN NULL
                 ELSE coalesce((SELECT s.dead_at IS NOT NULL OR pg_try_advisory_xact_lock(s.lock_key)
                                  FROM ${names.sessions} s WHERE s.id = k.id), true) END
             FROM (SELECT ${session} AS id) k)`;
}

/** The record with what `holderGoneColumn` read, when it could tell. */
export function withHolderGone(record: RunRecord, gone: unknown): RunRecord {
  return record.owner === null || typeof gone !== 'boolean'
    ? record
    : { ...record, holderGone: gone };
}

/**
 * A run's journal since its checkpoint, for the runs table under `alias`, as the text of a JSON array: the
 * entries kept in its row (one per line, see `000004_inline_journal.sql`), then those written to the journal
 * table because they did not fit there. `decodeJournal` puts them in seq order.
 */
export function journalColumn(names: Names, alias: string): string {
  return `'[' || concat_ws(',', nullif(replace(rtrim(${alias}.journal, E'\\n'), E'\\n', ','), ''),
      (SELECT string_agg(j.entry, ',' ORDER BY j.seq) FROM ${names.journal} j
        WHERE j.run_id = ${alias}.run_id AND j.seq > coalesce(${alias}.checkpoint_seq, -1))) || ']'`;
}

/**
 * A run's mailbox (the signals above its consumed cursor), for the runs table under `alias`, as the text of a
 * JSON array in seq order; `decodeSignals` reads it.
 */
export function signalsColumn(names: Names, alias: string): string {
  return `(SELECT '[' || coalesce(string_agg(json_build_object(
                'seq', s.seq, 'name', s.name, 'payload', s.payload, 'idempotencyKey', s.idempotency_key,
                'at', floor(extract(epoch FROM s.at) * 1000)::bigint)::text, ',' ORDER BY s.seq), '') || ']'
             FROM ${names.signals} s
            WHERE s.run_seq = ${alias}.created_seq AND s.seq > ${alias}.signals_consumed)`;
}

/** The mailbox a `signalsColumn` read. */
export function decodeSignals(text: unknown, runId: string): RunSignal[] {
  const signals = parseJson(text, runId, 'mailbox');
  if (!Array.isArray(signals)) throw snapshotInvalidError(runId, 'its mailbox is not a list');
  return signals as unknown as RunSignal[];
}

/** The journal a `journalColumn` read, in seq order. */
export function decodeJournal(text: unknown, runId: string): JournalEntry[] {
  let entries: unknown;
  try {
    entries = JSON.parse(text as string);
  } catch {
    throw snapshotInvalidError(runId, 'a line of its journal is not JSON');
  }
  if (!Array.isArray(entries)) throw snapshotInvalidError(runId, 'its journal is not a list');
  // The runtime checks each entry; an entry without a number seq sorts last.
  const seqOf = (entry: unknown) => {
    const seq = (entry as { seq?: unknown } | null)?.seq;
    return typeof seq === 'number' ? seq : Infinity;
  };
  return (entries as JournalEntry[]).sort((a, b) => seqOf(a) - seqOf(b));
}

/**
 * The snapshot version and long arrays a row carried, for the store's record of what is stored; `dropped` when an
 * advisory array (history) could not be read, and was left out. `SNAPSHOT_INVALID` when the rows cannot be read.
 */
export function storedItemsOf(row: readonly unknown[]): {
  version: number;
  arrays: Map<string, LoadedArray>;
  dropped: boolean;
} {
  const read = readArrays(row);
  return {
    version: row[at.snapshot_version] as number,
    arrays: read.arrays,
    dropped: read.dropped.size > 0,
  };
}

function readArrays(row: readonly unknown[]): ReturnType<typeof arraysOfRows> & object {
  const runId = row[at.run_id] as string;
  let rows: ChunkRow[];
  try {
    rows = JSON.parse(row[at.snapshot_items] as string) as ChunkRow[];
  } catch {
    throw snapshotInvalidError(runId, 'its long arrays cannot be read');
  }
  const read = arraysOfRows(rows);
  if (typeof read === 'string') throw snapshotInvalidError(runId, read);
  return read;
}

function mergeSnapshotOf(row: readonly unknown[]): JsonValue | null {
  const runId = row[at.run_id] as string;
  const stored = parseJson(row[at.snapshot], runId);
  const read = readArrays(row);
  if (stored === null) return stored;
  const { inline, arrays, dropped, problem } = checkItemCounts(stored, read);
  if (problem !== undefined) throw snapshotInvalidError(runId, problem);
  if (arrays.size === 0 && dropped.size === 0) return inline;
  return mergeSnapshot(
    inline,
    new Map([...arrays].map(([path, array]) => [path, array.items])),
    dropped,
  );
}

function parseJson(text: unknown, runId: string, what = 'snapshot'): JsonValue | null {
  if (typeof text !== 'string') return null;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw snapshotInvalidError(runId, `its ${what} is not JSON`);
  }
}

/**
 * Builds a `RunRecord` from a row selected with `runColumns`. A run whose rows were changed behind the store's
 * back is `SNAPSHOT_INVALID`, or, with `malformed: 'null'` (a listing or a batch claim, which must not fail for
 * every run because of one), a record whose snapshot is null, marked `unreadable` with why.
 */
export function decodeRun(
  row: readonly unknown[],
  malformed: 'throw' | 'null' = 'throw',
): RunRecord {
  let unreadable: string | undefined;
  /** A part of the row read, or, in a listing, null once it cannot be (the first reason kept). */
  const read = <T>(part: () => T): T | null => {
    if (malformed === 'throw') return part();
    try {
      return part();
    } catch (error) {
      unreadable ??= isCairnError(error)
        ? error.message
        : `its rows cannot be read: ${String(error)}`;
      return null;
    }
  };
  const snapshot = read(() => mergeSnapshotOf(row));
  const record = read(() => decodeRecord(row, snapshot)) ?? decodeRecord(row, null, true);
  if (unreadable !== undefined) return { ...record, snapshot: null, unreadable };
  return record;
}

/** The record of a row, its snapshot given; `bare` leaves out what is parsed from JSON (output, error, wait). */
function decodeRecord(
  row: readonly unknown[],
  snapshot: JsonValue | null,
  bare = false,
): RunRecord {
  const runId = row[at.run_id] as string;
  const parentRunId = row[at.parent_run_id] as string | null;
  const record: RunRecord = {
    runId,
    incarnation: row[at.incarnation] as string,
    kind: row[at.kind] as string,
    name: row[at.name] as string,
    signature: row[at.signature] as string,
    status: row[at.status] as RunStatus,
    epoch: row[at.epoch] as number,
    snapshot,
    owner: (row[at.owner] as string | null) ?? null,
    leaseUntil: (row[at.lease_until] as number | null) ?? null,
    createdAt: row[at.created_at] as number,
    updatedAt: row[at.updated_at] as number,
    recoveries: row[at.recoveries] as number,
    stalls: row[at.stalls] as number,
    cancelRequested: row[at.cancel_requested] as boolean,
    parent:
      parentRunId === null
        ? null
        : { runId: parentRunId, incarnation: row[at.parent_incarnation] as string },
    rootRunId: (row[at.root_run_id] as string | null) ?? null,
    wait: bare ? null : ((parseJson(row[at.wait], runId, 'wait') as RunWait | null) ?? null),
  };
  if (bare) return record;
  if (typeof row[at.output] === 'string')
    record.output = parseJson(row[at.output], runId, 'output') as JsonValue;
  if (typeof row[at.error] === 'string')
    record.error = parseJson(row[at.error], runId, 'error') as unknown as SerializedError;
  return record;
}
