import type { Clock } from '../clock.js';
import { compactRecord, type CompactHistory } from '../history/compact-history.js';
import { isJsonObject } from '../history/run-events.js';
import type { HistoryRecord, StoredHistory } from '../history/stored-history.js';
import type { JsonValue } from '../json.js';
import type { EffectOutcome, RunStatus } from '../store/contract.js';
import type { RunWait } from '../store/waits.js';
import type { EffectTelemetry, PerformCommand } from './step-function.js';

/**
 * How many records a run's history keeps (about 200 agent trips): every checkpoint carries the whole history,
 * so it is bounded, and the oldest records go first. Attempts are kept while the rest fits.
 */
export const maxHistoryRecords = 600;

type EffectRecord = Extract<HistoryRecord, { t: 'effect' }>;
type UnitRecord = Extract<HistoryRecord, { t: 'unit' }>;

/** The record a checkpoint that ends an attempt adds: its wait, or the run's end. */
export type HistoryEnd = { wait: RunWait } | { status: RunStatus; code?: string };

/** Who holds the run in the attempt being recorded. */
export interface AttemptHolder {
  epoch: number;
  owner: string;
  /** The owner the claim took the run from, when that one never released it. */
  takenFrom: string | null;
}

/**
 * One attempt's additions to a run's history, kept in memory and handed to each checkpoint whole: the history
 * costs no write of its own, and what a crash loses of it is only what the lost checkpoint would have said.
 * Seqs come from the journal's counter, which every checkpoint records, so they keep rising across attempts.
 * Each record's compact form (what a checkpoint carries) is made once, by the first checkpoint that carries it,
 * and kept beside it: a checkpoint copies the list and makes the forms of the records new or changed since the
 * last one (an effect that started and settled between two checkpoints is made once, settled). A changed record
 * gets a new compact form, so a checkpoint on its way keeps the ones it was given (and a store may compare them
 * by identity).
 */
export class HistoryRecorder {
  private records: HistoryRecord[];
  /** `records`' compact forms, index for index; undefined for one not made yet. */
  private compact: Array<JsonValue[] | undefined>;
  private truncatedAt: number | undefined;
  /** The time the compact form counts from: the history's first record's, for the life of the run. */
  private t0: number | undefined;
  /** The units the history holds a record of, and those of them still open. */
  private readonly units = new Set<string>();
  private readonly openUnits = new Map<string, UnitRecord>();
  /** Each effect's record in the history, by effect id. */
  private readonly effects = new Map<string, EffectRecord>();

  constructor(
    stored: StoredHistory | undefined,
    private readonly nextSeq: () => number,
    private readonly clock: Clock,
    private readonly telemetry: EffectTelemetry | undefined,
    private readonly limit = maxHistoryRecords,
  ) {
    this.records = [...(stored?.records ?? [])];
    this.truncatedAt = stored?.truncatedAt;
    this.t0 = stored?.t0 ?? stored?.records[0]?.at;
    const t0 = this.t0 ?? 0;
    this.compact = this.records.map((record) => compactRecord(record, t0));
    for (const record of this.records) {
      if (record.t === 'effect') this.effects.set(record.id, record);
      if (record.t !== 'unit') continue;
      this.units.add(record.u);
      if (record.e === undefined) this.openUnits.set(record.u, record);
    }
  }

  /**
   * The attempt begins, the run found in `status`. When the attempt before it never ended (its last record is
   * not an end or a wait), it was abandoned: taken over from a holder that never gave the run up (it crashed,
   * or froze past its lease), handed over (a worker shutting down), or suspended (its store kept failing).
   * What it showed after its last durable event is superseded.
   */
  attemptStarted(holder: AttemptHolder, status: RunStatus): void {
    const last = this.records.at(-1);
    const previous = this.records[this.lastIndex((record) => record.t === 'attempt')] as
      Extract<HistoryRecord, { t: 'attempt' }> | undefined;
    if (
      previous !== undefined &&
      last !== undefined &&
      last.t !== 'waiting' &&
      last.t !== 'ended'
    ) {
      this.add({
        t: 'abandoned',
        s: this.nextSeq(),
        at: this.clock.now(),
        ep: previous.ep,
        o: previous.o,
        last: Math.max(...this.records.map((record) => ('e' in record && record.e) || record.s)),
        how:
          holder.takenFrom !== null
            ? 'taken_over'
            : status === 'suspended'
              ? 'suspended'
              : 'handed_over',
      });
    }
    this.add({
      t: 'attempt',
      s: this.nextSeq(),
      at: this.clock.now(),
      ep: holder.epoch,
      o: holder.owner,
      ...(holder.takenFrom === null ? {} : { from: holder.takenFrom }),
    });
  }

  /** An effect starts running in this attempt (its unit starts with its first effect). */
  effectStarted(command: PerformCommand, at = this.clock.now()): void {
    const unit = this.telemetry?.unit?.(command.effect)?.key;
    if (unit !== undefined && !this.units.has(unit)) {
      // No label: the compact form a checkpoint carries leaves it out, and reading works it out.
      const record: UnitRecord = { t: 'unit', s: this.nextSeq(), at, u: unit };
      this.units.add(unit);
      this.openUnits.set(unit, record);
      this.add(record);
    }
    const index = this.effectIndex(command.id);
    // Started again in a later attempt (an idempotent effect a crash left in flight): the new start counts.
    const record: EffectRecord = {
      t: 'effect',
      s: this.nextSeq(),
      at,
      id: command.id,
      ...(unit === undefined ? {} : { u: unit }),
      n: this.telemetry?.span(command.effect).name ?? command.effect.kind,
      k: command.effect.kind,
    };
    if (index >= 0) {
      this.records.splice(index, 1);
      this.compact.splice(index, 1);
    }
    this.add(record);
  }

  /**
   * An effect settled: ran here, was reused from the journal, or is answered as outcome unknown. An effect the
   * history never saw start (its start was lost with a crashed attempt's unwritten checkpoint) is recorded as
   * starting and settling here.
   */
  effectSettled(
    command: PerformCommand,
    outcome: EffectOutcome,
    at: number,
    startedAt?: number,
  ): void {
    let index = this.effectIndex(command.id);
    const current = index >= 0 ? (this.records[index] as EffectRecord) : undefined;
    if (current?.e !== undefined) return;
    if (current === undefined) {
      this.effectStarted(command, startedAt ?? at);
      index = this.effectIndex(command.id);
    }
    const started = this.records[index] as EffectRecord;
    const value = outcome.status === 'ok' ? outcome.value : (outcome.error ?? null);
    const usage =
      outcome.status === 'ok' ? this.telemetry?.result?.(command.effect, outcome.value) : undefined;
    const input = usage?.['gen_ai.usage.input_tokens'];
    const output = usage?.['gen_ai.usage.output_tokens'];
    const child = outcome.status === 'ok' ? childRunIdOf(outcome.value) : undefined;
    const code = outcome.status === 'ok' ? undefined : outcome.error?.code;
    this.replace(index, {
      ...started,
      e: this.nextSeq(),
      end: at,
      o: outcome.status,
      ...(code === undefined ? {} : { c: code }),
      b: value === null ? 0 : JSON.stringify(value).length,
      ...(typeof input === 'number' ? { in: input } : {}),
      ...(typeof output === 'number' ? { out: output } : {}),
      ...(child === undefined ? {} : { ch: child }),
    });
  }

  /**
   * Units (trips, nodes) none of whose effects is pending any more have settled. Their token usage is not
   * kept: reading the history sums their effects'.
   */
  unitsSettled(pending: readonly PerformCommand[]): void {
    if (this.openUnits.size === 0) return;
    const open = new Set(pending.map((command) => this.telemetry?.unit?.(command.effect)?.key));
    const now = this.clock.now();
    for (const [unit, record] of this.openUnits) {
      if (open.has(unit)) continue;
      this.openUnits.delete(unit);
      const index = this.records.lastIndexOf(record);
      if (index >= 0) this.replace(index, { ...record, e: this.nextSeq(), end: now });
    }
  }

  /** Signals handed to the step. */
  signals(names: readonly string[]): void {
    if (names.length > 0)
      this.add({ t: 'signals', s: this.nextSeq(), at: this.clock.now(), names: [...names] });
  }

  /**
   * What a checkpoint carries, in the compact form; with `last` (a wait or an end), that record too, only in
   * what is returned.
   */
  stored(last?: HistoryEnd): CompactHistory {
    const t0 = this.baseTime();
    const records = this.compact.slice() as JsonValue[][];
    for (let index = 0; index < records.length; index += 1) {
      if (records[index] === undefined)
        records[index] = this.compact[index] = compactRecord(this.records[index]!, t0);
    }
    if (last !== undefined) {
      const s = this.nextSeq();
      const at = this.clock.now();
      records.push(
        compactRecord(
          'wait' in last
            ? { t: 'waiting', s, at, until: last.wait.until, sig: [...last.wait.signals] }
            : {
                t: 'ended',
                s,
                at,
                st: last.status,
                ...(last.code === undefined ? {} : { c: last.code }),
              },
          t0,
        ),
      );
    }
    return {
      v: 2,
      t0,
      records,
      ...(this.truncatedAt === undefined ? {} : { truncatedAt: this.truncatedAt }),
    };
  }

  private effectIndex(effectId: string): number {
    const record = this.effects.get(effectId);
    return record === undefined ? -1 : this.records.lastIndexOf(record);
  }

  private lastIndex(matches: (record: HistoryRecord) => boolean): number {
    for (let index = this.records.length - 1; index >= 0; index -= 1) {
      if (matches(this.records[index]!)) return index;
    }
    return -1;
  }

  /** The time the compact form counts from, fixed by the first record. */
  private baseTime(): number {
    return (this.t0 ??= this.records[0]?.at ?? this.clock.now());
  }

  private replace(index: number, record: HistoryRecord): void {
    if (record.t === 'effect') this.effects.set(record.id, record);
    this.records[index] = record;
    this.compact[index] = undefined;
  }

  /** Adds a record; past the limit, the oldest tenth of the records (attempts last) is dropped. */
  private add(record: HistoryRecord): void {
    this.t0 ??= record.at;
    if (record.t === 'effect') this.effects.set(record.id, record);
    this.records.push(record);
    this.compact.push(undefined);
    if (this.records.length <= this.limit) return;
    const drop = Math.max(1, Math.floor(this.limit / 10));
    const droppable = this.records.filter((r) => r.t !== 'attempt' && r.t !== 'abandoned');
    const dropped = new Set((droppable.length > drop ? droppable : this.records).slice(0, drop));
    // A unit or effect still open is never dropped: it would settle into a history that lost its start.
    for (const r of dropped)
      if ((r.t === 'unit' || r.t === 'effect') && r.e === undefined) dropped.delete(r);
    for (const r of dropped) {
      this.truncatedAt = Math.max(this.truncatedAt ?? 0, r.s, ('e' in r && r.e) || 0);
      if (r.t === 'unit') this.units.delete(r.u);
      if (r.t === 'effect' && this.effects.get(r.id) === r) this.effects.delete(r.id);
    }
    const kept = this.records.map((r) => !dropped.has(r));
    this.records = this.records.filter((_, index) => kept[index]);
    this.compact = this.compact.filter((_, index) => kept[index]);
  }
}

/** The child run an effect ran, when its value names one (a planner's agent node: `{ child: { runId } }`). */
function childRunIdOf(value: JsonValue): string | undefined {
  if (!isJsonObject(value) || !isJsonObject(value.child)) return undefined;
  return typeof value.child.runId === 'string' ? value.child.runId : undefined;
}
