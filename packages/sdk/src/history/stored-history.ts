import type { JsonValue } from '../json.js';
import type { RunStatus } from '../store/contract.js';
import { expandRecords, unitLabel } from './compact-history.js';
import { isJsonObject, type AbandonedHow, type HistoryUsage, type RunEvent } from './run-events.js';

/**
 * A run's history as read from its checkpoint: compact records (one per attempt, unit, effect, signal batch, wait
 * and end), each turned into one or two `RunEvent`s. Checkpoints write it in the compact form of
 * `CompactHistory`; `t0` is that form's base time.
 */
export interface StoredHistory {
  records: HistoryRecord[];
  /** Records up to this seq were dropped to keep the history bounded. */
  truncatedAt?: number;
  /** The time the compact form counts from (its first record's, kept as records are dropped). */
  t0?: number;
}

/** `s`: seq, `at`: time; an effect's or unit's `e`/`end` are its settling seq and time. */
export type HistoryRecord =
  | { t: 'attempt'; s: number; at: number; ep: number; o: string; from?: string }
  | {
      t: 'abandoned';
      s: number;
      at: number;
      ep: number;
      o: string;
      last: number;
      how: AbandonedHow;
    }
  | {
      t: 'unit';
      s: number;
      at: number;
      u: string;
      /** Its label; when left out (a record kept in memory), worked out from `u` when read. */
      l?: string;
      e?: number;
      end?: number;
      in?: number;
      out?: number;
    }
  | {
      t: 'effect';
      s: number;
      at: number;
      id: string;
      u?: string;
      n: string;
      k: string;
      e?: number;
      end?: number;
      o?: 'ok' | 'error' | 'unknown';
      c?: string;
      b?: number;
      in?: number;
      out?: number;
      ch?: string;
    }
  | { t: 'signals'; s: number; at: number; names: string[] }
  | { t: 'waiting'; s: number; at: number; until: number | null; sig: string[] }
  | { t: 'ended'; s: number; at: number; st: RunStatus; c?: string };

const recordTypes = new Set([
  'attempt',
  'abandoned',
  'unit',
  'effect',
  'signals',
  'waiting',
  'ended',
]);

/**
 * The history a stored runtime snapshot carries, or undefined when it has none; `upTo` is the snapshot's
 * `journalSeq`, above which no record of it can be. History is what operators read, never what a run resumes
 * from: a malformed one is not a reason to refuse the run, and reads as truncated (the records it cannot read
 * dropped) instead. Both forms are read: the compact one (`v: 2`) and the objects checkpoints wrote before it.
 */
export function parseStoredHistory(
  value: JsonValue | undefined,
  upTo: number,
): StoredHistory | undefined {
  if (value === undefined || value === null) return undefined;
  const compact = isJsonObject(value) && value.v === 2 && typeof value.t0 === 'number';
  if (!isJsonObject(value) || !Array.isArray(value.records) || !(compact || value.v === 1)) {
    return { records: [], truncatedAt: upTo };
  }
  const t0 = compact ? (value.t0 as number) : undefined;
  const candidates = compact
    ? expandRecords(value.records, t0!)
    : value.records.map((record) =>
        isRecordObject(record) ? (record as unknown as HistoryRecord) : undefined,
      );
  const records: HistoryRecord[] = [];
  let last = 0;
  let malformed = false;
  for (const record of candidates) {
    if (record === undefined || !Number.isSafeInteger(record.s) || record.s <= last) {
      malformed = true;
      continue;
    }
    last = record.s;
    records.push(record);
  }
  const truncatedAt =
    typeof value.truncatedAt === 'number' && Number.isSafeInteger(value.truncatedAt)
      ? value.truncatedAt
      : undefined;
  return {
    records,
    ...(malformed
      ? { truncatedAt: Math.max(truncatedAt ?? 0, last, upTo) }
      : truncatedAt === undefined
        ? {}
        : { truncatedAt }),
    ...(t0 === undefined ? {} : { t0 }),
  };
}

function isRecordObject(record: JsonValue): boolean {
  return (
    isJsonObject(record) &&
    typeof record.t === 'string' &&
    recordTypes.has(record.t) &&
    typeof record.s === 'number' &&
    typeof record.at === 'number'
  );
}

/** The events a history holds, in seq order, from after `after` (0: all of them). */
export function historyEvents(history: StoredHistory | undefined, after = 0): RunEvent[] {
  if (history === undefined) return [];
  const events: RunEvent[] = [];
  if (history.truncatedAt !== undefined && after < history.truncatedAt) {
    events.push({ seq: history.truncatedAt, at: 0, type: 'history.truncated' });
  }
  for (const record of history.records)
    for (const event of recordEvents(record)) events.push(event);
  return events.filter((event) => event.seq > after).sort((a, b) => a.seq - b.seq);
}

function usageOf(record: { in?: number; out?: number }): { usage?: HistoryUsage } {
  if (record.in === undefined && record.out === undefined) return {};
  return { usage: { inputTokens: record.in ?? 0, outputTokens: record.out ?? 0 } };
}

function recordEvents(record: HistoryRecord): RunEvent[] {
  const base = { seq: record.s, at: record.at };
  switch (record.t) {
    case 'attempt':
      return [
        {
          ...base,
          type: 'attempt.started',
          epoch: record.ep,
          owner: record.o,
          takenFrom: record.from ?? null,
        },
      ];
    case 'abandoned':
      return [
        {
          ...base,
          type: 'attempt.abandoned',
          epoch: record.ep,
          owner: record.o,
          lastSeq: record.last,
          how: record.how,
        },
      ];
    case 'unit': {
      const started: RunEvent = {
        ...base,
        type: 'unit.started',
        unit: record.u,
        label: record.l ?? unitLabel(record.u),
      };
      if (record.e === undefined || record.end === undefined) return [started];
      return [
        started,
        {
          seq: record.e,
          at: record.end,
          type: 'unit.settled',
          unit: record.u,
          label: record.l ?? unitLabel(record.u),
          startedAt: record.at,
          ms: record.end - record.at,
          ...usageOf(record),
        },
      ];
    }
    case 'effect': {
      const common = {
        effectId: record.id,
        unit: record.u ?? null,
        name: record.n,
        kind: record.k,
      };
      const started: RunEvent = { ...base, type: 'effect.started', ...common };
      if (record.e === undefined || record.end === undefined || record.o === undefined)
        return [started];
      return [
        started,
        {
          seq: record.e,
          at: record.end,
          type: 'effect.settled',
          ...common,
          outcome: record.o,
          ...(record.c === undefined ? {} : { code: record.c }),
          ms: record.end - record.at,
          ...(record.b === undefined ? {} : { bytes: record.b }),
          ...usageOf(record),
          ...(record.ch === undefined ? {} : { childRunId: record.ch }),
        },
      ];
    }
    case 'signals':
      return [{ ...base, type: 'signals', names: [...record.names] }];
    case 'waiting':
      return [{ ...base, type: 'waiting', until: record.until, signals: [...record.sig] }];
    case 'ended':
      return [
        {
          ...base,
          type: 'ended',
          status: record.st,
          ...(record.c === undefined ? {} : { code: record.c }),
        },
      ];
  }
}

/**
 * The durable events of a run, from after `after`, as its last checkpoint holds them: what `cairn runs
 * timeline` and `client.watch` read. A run not yet checkpointed by a definition has none.
 */
export function runEvents(record: { snapshot: JsonValue | null }, after = 0): RunEvent[] {
  const snapshot = record.snapshot ?? undefined;
  if (!isJsonObject(snapshot)) return [];
  const upTo = typeof snapshot.journalSeq === 'number' ? snapshot.journalSeq : 0;
  return historyEvents(parseStoredHistory(snapshot.history, upTo), after);
}
