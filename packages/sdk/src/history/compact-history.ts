import type { JsonValue } from '../json.js';
import type { HistoryRecord } from './stored-history.js';

/**
 * A run's history as checkpoints write it (`v: 2`): each record a short array, its times in milliseconds since the
 * history's first record (`t0`), an end as a duration and a settling seq as a distance from the start, and what
 * reading can work out left out (a unit's label and token usage; an effect's unit when its id names it). An agent
 * trip with one tool call costs about 150 bytes, against 450 as objects (`v: 1`, which is still read). Every
 * checkpoint carries the whole history, so its size is paid at every one.
 *
 * | record    | array                                                                      |
 * | --------- | -------------------------------------------------------------------------- |
 * | attempt   | `['a', s, at, epoch, owner, takenFrom?]`                                   |
 * | abandoned | `['x', s, at, epoch, owner, lastSeq, how]`                                 |
 * | unit      | `['u', s, at, unit, e - s?, end - at?]`                                    |
 * | effect    | `['e', s, at, id, kind, name, unit, e - s?, end - at?, outcome?, bytes?, inputTokens?, outputTokens?, code?, childRunId?]` |
 * | signals   | `['s', s, at, names]`                                                      |
 * | waiting   | `['w', s, at, until, signals]`                                             |
 * | ended     | `['z', s, at, status, code?]`                                              |
 *
 * An effect's `unit` is 0 when it is its id up to the first `/` (an agent's `trip-2/tool/c1`), 1 when it is the
 * id (a planner's `node/fetch`), null when it has none. A missing value in the middle is null; trailing ones are
 * left off.
 */
export interface CompactHistory {
  v: 2;
  t0: number;
  records: JsonValue[][];
  truncatedAt?: number;
}

type Field = JsonValue | undefined;

/** The array a record is written as, its times taken from `t0`. */
export function compactRecord(record: HistoryRecord, t0: number): JsonValue[] {
  const at = record.at - t0;
  switch (record.t) {
    case 'attempt':
      return fields('a', record.s, at, record.ep, record.o, record.from);
    case 'abandoned':
      return fields('x', record.s, at, record.ep, record.o, record.last, record.how);
    case 'unit':
      return fields('u', record.s, at, record.u, ...settling(record));
    case 'effect':
      return fields(
        'e',
        record.s,
        at,
        record.id,
        record.k,
        record.n,
        unitField(record.id, record.u),
        ...settling(record),
        record.o,
        record.b,
        record.in,
        record.out,
        record.c,
        record.ch,
      );
    case 'signals':
      return fields('s', record.s, at, record.names);
    case 'waiting':
      return fields('w', record.s, at, record.until, record.sig);
    case 'ended':
      return fields('z', record.s, at, record.st, record.c);
  }
}

function settling(record: { s: number; at: number; e?: number; end?: number }): Field[] {
  return [
    record.e === undefined ? undefined : record.e - record.s,
    record.end === undefined ? undefined : record.end - record.at,
  ];
}

/** An effect's unit: 1 when it is the id, 0 when it is the id up to its first `/`. */
function unitField(id: string, unit: string | undefined): JsonValue {
  if (unit === undefined) return null;
  if (unit === id) return 1;
  return id.indexOf('/') === unit.length && id.startsWith(unit) ? 0 : unit;
}

function fields(...values: Field[]): JsonValue[] {
  let length = values.length;
  while (length > 0 && values[length - 1] === undefined) length -= 1;
  values.length = length;
  for (let i = 0; i < length; i += 1) if (values[i] === undefined) values[i] = null;
  return values as JsonValue[];
}

/**
 * The records of a compact history, or undefined for a record that is not one. A unit's token usage is the sum of
 * its effects' that the history still holds.
 */
export function expandRecords(
  compact: readonly JsonValue[],
  t0: number,
): Array<HistoryRecord | undefined> {
  const records = compact.map((value) =>
    Array.isArray(value) ? expandRecord(value, t0) : undefined,
  );
  const usage = new Map<string, { in: number; out: number }>();
  for (const record of records) {
    if (record?.t !== 'effect' || record.u === undefined) continue;
    const sum = usage.get(record.u) ?? { in: 0, out: 0 };
    sum.in += record.in ?? 0;
    sum.out += record.out ?? 0;
    usage.set(record.u, sum);
  }
  for (const record of records) {
    const sum = record?.t === 'unit' && record.e !== undefined ? usage.get(record.u) : undefined;
    if (record?.t === 'unit' && sum !== undefined && (sum.in > 0 || sum.out > 0)) {
      record.in = sum.in;
      record.out = sum.out;
    }
  }
  return records;
}

function expandRecord(value: JsonValue[], t0: number): HistoryRecord | undefined {
  const [tag, s, relativeAt] = value;
  if (typeof s !== 'number' || typeof relativeAt !== 'number') return undefined;
  const at = t0 + relativeAt;
  const field = (index: number) => value[index] ?? undefined;
  const text = (index: number) => optional(field(index), 'string');
  const number = (index: number) => optional(field(index), 'number');
  const ends = (from: number) => {
    const e = number(from);
    const end = number(from + 1);
    return {
      ...(e === undefined ? {} : { e: s + e }),
      ...(end === undefined ? {} : { end: at + end }),
    };
  };
  switch (tag) {
    case 'a': {
      const [ep, o, from] = [number(3), text(4), text(5)];
      if (ep === undefined || o === undefined) return undefined;
      return { t: 'attempt', s, at, ep, o, ...(from === undefined ? {} : { from }) };
    }
    case 'x': {
      const [ep, o, last, how] = [number(3), text(4), number(5), text(6)];
      if (ep === undefined || o === undefined || last === undefined) return undefined;
      if (how !== 'taken_over' && how !== 'handed_over' && how !== 'suspended') return undefined;
      return { t: 'abandoned', s, at, ep, o, last, how };
    }
    case 'u': {
      const u = text(3);
      if (u === undefined) return undefined;
      return { t: 'unit', s, at, u, l: unitLabel(u), ...ends(4) };
    }
    case 'e':
      return expandEffect(value, s, at, ends(7));
    case 's': {
      const names = strings(field(3));
      return names === undefined ? undefined : { t: 'signals', s, at, names };
    }
    case 'w': {
      const until = field(3) === undefined ? null : number(3);
      const sig = strings(field(4));
      if (until === undefined || sig === undefined) return undefined;
      return { t: 'waiting', s, at, until, sig };
    }
    case 'z': {
      const [st, c] = [text(3), text(4)];
      if (st === undefined) return undefined;
      return { t: 'ended', s, at, st: st as never, ...(c === undefined ? {} : { c }) };
    }
    default:
      return undefined;
  }
}

function expandEffect(
  value: JsonValue[],
  s: number,
  at: number,
  ends: { e?: number; end?: number },
): HistoryRecord | undefined {
  const [id, k, n, unit] = [value[3], value[4], value[5], value[6]];
  if (typeof id !== 'string' || typeof k !== 'string' || typeof n !== 'string') return undefined;
  const u =
    unit === 0 ? id.split('/')[0] : unit === 1 ? id : typeof unit === 'string' ? unit : undefined;
  const o = value[9];
  if (o !== undefined && o !== null && o !== 'ok' && o !== 'error' && o !== 'unknown')
    return undefined;
  const record: HistoryRecord = { t: 'effect', s, at, id, k, n, ...ends };
  if (u !== undefined) record.u = u;
  if (typeof o === 'string') record.o = o;
  const numbers = { b: value[10], in: value[11], out: value[12] } as const;
  for (const [key, part] of Object.entries(numbers))
    if (typeof part === 'number') record[key as 'b'] = part;
  if (typeof value[13] === 'string') record.c = value[13];
  if (typeof value[14] === 'string') record.ch = value[14];
  return record;
}

function optional<T extends 'string' | 'number'>(
  value: JsonValue | undefined,
  type: T,
): (T extends 'string' ? string : number) | undefined {
  return typeof value === type ? (value as never) : undefined;
}

function strings(value: JsonValue | undefined): string[] | undefined {
  return Array.isArray(value) && value.every((name) => typeof name === 'string')
    ? (value as string[])
    : undefined;
}

/** `trip-3` → `trip 3`, `node/fetch` → `node fetch`. */
export function unitLabel(key: string): string {
  return key.replace(/^([a-z]+)[-/]/, '$1 ');
}
