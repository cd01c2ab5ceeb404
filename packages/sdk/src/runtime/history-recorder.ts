import type { Clock } from '../clock.js';
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
 * Records are replaced, never changed in place: a checkpoint on its way keeps the ones it was given.
 */
export class HistoryRecorder {
  private records: HistoryRecord[];
  private truncatedAt: number | undefined;

  constructor(
    stored: StoredHistory | undefined,
    private readonly nextSeq: () => number,
    private readonly clock: Clock,
    private readonly telemetry: EffectTelemetry | undefined,
    private readonly limit = maxHistoryRecords,
  ) {
    this.records = [...(stored?.records ?? [])];
    this.truncatedAt = stored?.truncatedAt;
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
    if (unit !== undefined && !this.records.some((r) => r.t === 'unit' && r.u === unit)) {
      this.add({ t: 'unit', s: this.nextSeq(), at, u: unit, l: unitLabel(unit) });
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
    if (index >= 0) this.records.splice(index, 1);
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
    this.records[index] = {
      ...started,
      e: this.nextSeq(),
      end: at,
      o: outcome.status,
      ...(code === undefined ? {} : { c: code }),
      b: value === null ? 0 : JSON.stringify(value).length,
      ...(typeof input === 'number' ? { in: input } : {}),
      ...(typeof output === 'number' ? { out: output } : {}),
      ...(child === undefined ? {} : { ch: child }),
    };
  }

  /** Units (trips, nodes) none of whose effects is pending any more have settled. */
  unitsSettled(pending: readonly PerformCommand[]): void {
    const open = new Set(pending.map((command) => this.telemetry?.unit?.(command.effect)?.key));
    const now = this.clock.now();
    this.records = this.records.map((record) => {
      if (record.t !== 'unit' || record.e !== undefined || open.has(record.u)) return record;
      let input = 0;
      let output = 0;
      for (const effect of this.records) {
        if (effect.t === 'effect' && effect.u === record.u) {
          input += effect.in ?? 0;
          output += effect.out ?? 0;
        }
      }
      const settled: UnitRecord = { ...record, e: this.nextSeq(), end: now };
      if (input > 0 || output > 0) Object.assign(settled, { in: input, out: output });
      return settled;
    });
  }

  /** Signals handed to the step. */
  signals(names: readonly string[]): void {
    if (names.length > 0)
      this.add({ t: 'signals', s: this.nextSeq(), at: this.clock.now(), names: [...names] });
  }

  /** What a checkpoint carries; with `last` (a wait or an end), that record too, only in what is returned. */
  stored(last?: HistoryEnd): StoredHistory {
    const records = [...this.records];
    if (last !== undefined) {
      const at = this.clock.now();
      records.push(
        'wait' in last
          ? {
              t: 'waiting',
              s: this.nextSeq(),
              at,
              until: last.wait.until,
              sig: [...last.wait.signals],
            }
          : {
              t: 'ended',
              s: this.nextSeq(),
              at,
              st: last.status,
              ...(last.code === undefined ? {} : { c: last.code }),
            },
      );
    }
    return {
      v: 1,
      records,
      ...(this.truncatedAt === undefined ? {} : { truncatedAt: this.truncatedAt }),
    };
  }

  private effectIndex(effectId: string): number {
    return this.lastIndex((record) => record.t === 'effect' && record.id === effectId);
  }

  private lastIndex(matches: (record: HistoryRecord) => boolean): number {
    for (let index = this.records.length - 1; index >= 0; index -= 1) {
      if (matches(this.records[index]!)) return index;
    }
    return -1;
  }

  /** Adds a record; past the limit, the oldest tenth of the records (attempts last) is dropped. */
  private add(record: HistoryRecord): void {
    this.records.push(record);
    if (this.records.length <= this.limit) return;
    const drop = Math.max(1, Math.floor(this.limit / 10));
    const droppable = this.records.filter((r) => r.t !== 'attempt' && r.t !== 'abandoned');
    const dropped = new Set((droppable.length > drop ? droppable : this.records).slice(0, drop));
    // A unit or effect still open is never dropped: it would settle into a history that lost its start.
    for (const r of dropped)
      if ((r.t === 'unit' || r.t === 'effect') && r.e === undefined) dropped.delete(r);
    for (const r of dropped)
      this.truncatedAt = Math.max(this.truncatedAt ?? 0, r.s, ('e' in r && r.e) || 0);
    this.records = this.records.filter((r) => !dropped.has(r));
  }
}

/** `trip-3` → `trip 3`, `node/fetch` → `node fetch`. */
function unitLabel(key: string): string {
  return key.replace(/^([a-z]+)[-/]/, '$1 ');
}

/** The child run an effect ran, when its value names one (a planner's agent node: `{ child: { runId } }`). */
function childRunIdOf(value: JsonValue): string | undefined {
  if (!isJsonObject(value) || !isJsonObject(value.child)) return undefined;
  return typeof value.child.runId === 'string' ? value.child.runId : undefined;
}
