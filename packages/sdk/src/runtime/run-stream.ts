import type { Clock, TimerHandle } from '../clock.js';
import { isCairnError, RunSuspendedError } from '../errors.js';
import type { ModelStreamPart } from '../model.js';
import {
  maxStreamName,
  maxStreamText,
  type StreamChunk,
  type StreamPart,
  type StreamStore,
} from '../store/stream.js';
import type { DurableStore } from '../store/contract.js';
import type { Attempt } from './attempt.js';
import { retryStoreCall, type StoreRetryPolicy } from './run-writer.js';
import type { StreamOptions } from './stream-options.js';

/**
 * The stream an attempt writes, when its run streams (`stream` set) and its store keeps streams; otherwise
 * none, and models are asked for whole answers.
 */
export function openRunStream(
  options: {
    store: DurableStore;
    clock: Clock;
    storeRetry: StoreRetryPolicy;
    stream?: boolean | StreamOptions;
  },
  attempt: Attempt,
): RunStream | undefined {
  const { store, stream } = options;
  if (stream === undefined || stream === false) return undefined;
  if (store.appendStream === undefined || store.streamPosition === undefined) return undefined;
  const streams: StreamWriting = {
    appendStream: store.appendStream.bind(store),
    streamPosition: store.streamPosition.bind(store),
  };
  return new RunStream(
    streams,
    attempt,
    options.clock,
    options.storeRetry,
    stream === true ? {} : stream,
    store.streamsWithWrites === true,
  );
}

/** Where one try of an effect says what it says: `write` until `close`, after which it is ignored. */
export interface StreamSink {
  write(part: ModelStreamPart): void;
  close(): void;
}

/** What an attempt needs of a store to write its stream. */
type StreamWriting = Pick<StreamStore, 'appendStream' | 'streamPosition'>;

interface Held {
  unit: string;
  part: StreamPart;
  at: number;
}

/**
 * What one attempt appends to its run's stream log. Deltas are coalesced (by time or size) and appended in
 * order under the attempt's fence, one append at a time, each retried with the same positions after an
 * unknown outcome (the store skips what landed). The first append learns the run's highest position: when an
 * earlier attempt streamed, each unit this attempt streams starts with a `superseded` marker, since a unit is
 * streamed again only when its call is made again (a settled call is reused, never re-run); a retry within the
 * attempt starts with one too. Before an effect's outcome is journaled, either `flush` is awaited or (on a
 * store that writes chunks with checkpoints) `takeTail` hands what is left to the write that journals it, so
 * every settled answer's deltas are in the log no later than the answer.
 */
export class RunStream {
  private held: Held[] = [];
  private heldChars = 0;
  private timer: TimerHandle | undefined;
  private sending: Promise<void> = Promise.resolve();
  /** An append is queued that has not started: it takes everything held when it does. */
  private queued = false;
  /** A send is due at the next turn of the event loop (`sendSoon`). */
  private soon = false;
  private failure: { error: unknown } | undefined;
  /** The highest position given to a chunk, once the first append learned where the log stood. */
  private highest: number | undefined;
  /**
   * Chunks handed to a write that journals an answer (`takeTail`) and not known written yet: the next append
   * sends them first (the store skips them if that write landed), so no later chunk can land before them.
   */
  private tail: StreamChunk[] = [];
  /** An earlier attempt streamed: units this one streams supersede what they said before. */
  private streamedBefore = false;
  private readonly marked = new Set<string>();
  /** Units this attempt appended something of. */
  private readonly saidUnits = new Set<string>();
  private closed = false;
  /** A store refused a chunk for good: the attempt goes on without streaming. */
  private disabled = false;
  private readonly coalesceMs: number;
  private readonly coalesceChars: number;

  constructor(
    private readonly store: StreamWriting,
    private readonly attempt: Attempt,
    private readonly clock: Clock,
    private readonly retry: StoreRetryPolicy,
    options: StreamOptions = {},
    /** The store writes chunks with checkpoints: a call's last chunks may ride with its answer (`takeTail`). */
    readonly rides = false,
  ) {
    this.coalesceMs = options.coalesceMs ?? 40;
    this.coalesceChars = options.coalesceChars ?? 400;
  }

  /**
   * A sink for one try of `unit`. A try after the first begins by superseding what the earlier ones said; a try
   * that says nothing ends with a marker, so what an earlier attempt said of the unit is superseded all the same
   * (dropped when nothing was streamed before this attempt).
   */
  open(unit: string, try_: number): StreamSink {
    let open = true;
    let said = false;
    if (try_ > 1) this.hold(unit, { type: 'superseded' });
    return {
      write: (part) => {
        if (!open || this.failure !== undefined || this.closed) return;
        said = true;
        // The common delta, a short text, is held as it is; anything else is checked and split first.
        if (part?.type === 'text' || part?.type === 'reasoning') {
          const { type, text } = part;
          if (typeof text === 'string' && text.length <= maxStreamText) {
            if (text.length > 0) this.holdText(unit, type, text);
            return;
          }
        }
        for (const kept of fitted(part)) this.hold(unit, kept);
      },
      close: () => {
        if (open && !said && !this.saidUnits.has(unit)) this.hold(unit, { type: 'superseded' });
        open = false;
      },
    };
  }

  /**
   * Holds what a unit says outside a model call's sink: how an effect settled (`DurableDefinition.streamOutcome`),
   * said once its outcome is known. It supersedes nothing, and nothing supersedes it but a later outcome.
   */
  say(unit: string, part: StreamPart): void {
    if (this.failure !== undefined || this.closed) return;
    this.hold(unit, part);
  }

  /** Appends everything held, and waits for every append so far: throws what made one fail for good. */
  async flush(): Promise<void> {
    this.send();
    await this.sending;
    if (this.failure !== undefined) throw this.failure.error;
  }

  /**
   * What is held, as chunks, for the write that journals an effect's answer to carry (see `StreamTail`): taken
   * now, so an append queued and not started finds nothing to send, and given positions after the appends on
   * their way. The chunks of earlier tails not known written go with them.
   */
  async takeTail(): Promise<StreamChunk[]> {
    this.timer?.cancel();
    this.timer = undefined;
    const batch = this.held;
    this.held = [];
    this.heldChars = 0;
    const taking = this.sending.then(async () => {
      if (this.failure !== undefined || this.closed || this.disabled) return [];
      this.tail.push(...(await this.positioned(batch)));
      return [...this.tail];
    });
    this.sending = taking.then(
      () => undefined,
      (error: unknown) => void (this.failure ??= { error }),
    );
    const chunks = await taking.catch(() => []);
    if (this.failure !== undefined) throw this.failure.error;
    return chunks;
  }

  /** The chunks of a tail up to `position` are written (with the answer they belong to). */
  landed(position: number): void {
    this.tail = this.tail.filter((chunk) => chunk.position > position);
  }

  /**
   * The attempt ended: nothing held or queued is appended any more, and the append in flight is waited for, so
   * that none reaches the store after the attempt's last write (where a refusal would read as a lost lease).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.held = [];
    await this.sending;
  }

  /** Holds a text delta, appended to the held one it continues: no new chunk per token. */
  private holdText(unit: string, type: 'text' | 'reasoning', text: string): void {
    const last = this.held[this.held.length - 1];
    const part = last?.unit === unit ? last.part : undefined;
    if (part?.type === type && part.text.length + text.length <= maxStreamText) {
      // Held parts are this stream's own until they are sent: extended in place.
      part.text += text;
      this.heldChars += text.length;
      if (this.heldChars >= this.coalesceChars) this.sendSoon();
      return;
    }
    this.hold(unit, { type, text });
  }

  private hold(unit: string, part: StreamPart): void {
    const last = this.held.at(-1);
    const merged = last?.unit === unit ? mergeParts(last.part, part) : undefined;
    if (merged !== undefined) last!.part = merged;
    else this.held.push({ unit, part, at: this.clock.now() });
    this.heldChars += partChars(part);
    if (this.heldChars >= this.coalesceChars) this.sendSoon();
    else this.timer ??= this.clock.setTimer(this.coalesceMs, () => this.send());
  }

  /**
   * A send once the deltas said in this turn of the event loop are held: a call that said them all at once (a
   * model that answers whole, a burst) has settled by then, and its chunks ride with the write that journals its
   * answer (`takeTail`) instead of costing an append of their own. A provider's deltas each arrive in a turn of
   * their own: for them this is the same send, a turn later.
   */
  private sendSoon(): void {
    if (this.soon) return;
    this.soon = true;
    setImmediate(() => {
      this.soon = false;
      this.send();
    });
  }

  /**
   * Queues an append of what is held when it starts, not of what is held now: deltas said while the append
   * before it is on its way (or before the queued one starts) go with it, so a burst (a model that answers at
   * once, or faster than the store writes) costs one append, not one per `coalesceChars`.
   */
  private send(): void {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.held.length === 0 || this.queued) return;
    this.queued = true;
    this.sending = this.sending.then(async () => {
      this.queued = false;
      const batch = this.held;
      this.held = [];
      this.heldChars = 0;
      // Whatever is held from here on waits for a send of its own: no timer may be left for it.
      this.timer?.cancel();
      this.timer = undefined;
      if (batch.length === 0 || this.failure !== undefined || this.closed || this.disabled) return;
      try {
        await this.append(batch);
      } catch (error) {
        // A refusal no retry changes (a chunk the store will not take) costs the stream, not the run: the
        // attempt goes on unstreamed. A lost lease, or a store that stays down, stops it as any write would.
        const cause = error instanceof RunSuspendedError ? error.cause : undefined;
        if (isCairnError(cause) && !cause.retryable) this.disabled = true;
        else this.failure = { error };
      }
    });
  }

  private call<T>(write: () => Promise<T>): Promise<T> {
    return retryStoreCall(write, this.attempt, this.clock, this.retry);
  }

  /**
   * Gives held deltas their positions, after the last one given (the first time, after where the log stands),
   * with the markers an earlier attempt's chunks call for.
   */
  private async positioned(batch: readonly Held[]): Promise<StreamChunk[]> {
    if (this.highest === undefined) {
      this.highest = await this.call(() => this.store.streamPosition(this.attempt.runId));
      this.streamedBefore = this.highest > 0;
    }
    const chunks: StreamChunk[] = [];
    let position = this.highest;
    for (const { unit, part, at } of batch) {
      if (part.type === 'superseded') {
        // Nothing of the unit can be in the log: no marker needed.
        if (!this.streamedBefore && !this.saidUnits.has(unit)) continue;
        this.marked.add(unit);
      } else if (part.type !== 'tool-outcome' && this.streamedBefore && !this.marked.has(unit)) {
        this.marked.add(unit);
        chunks.push({ position: (position += 1), unit, part: { type: 'superseded' }, at });
      }
      // Said as soon as it has a position: a retry's marker later in this same batch supersedes it.
      if (part.type !== 'superseded') this.saidUnits.add(unit);
      chunks.push({ position: (position += 1), unit, part, at });
    }
    this.highest = position;
    return chunks;
  }

  /** Appends a batch, after the chunks of a tail not known written (which the store skips if they were). */
  private async append(batch: readonly Held[]): Promise<void> {
    const chunks = [...this.tail, ...(await this.positioned(batch))];
    if (chunks.length === 0) return;
    await this.call(() => this.store.appendStream(this.attempt.fence, chunks));
    this.landed(chunks.at(-1)!.position);
  }
}

/** Two deltas of one unit appended as one chunk, when they continue each other. */
function mergeParts(held: StreamPart, next: StreamPart): StreamPart | undefined {
  if (
    (held.type === 'text' && next.type === 'text') ||
    (held.type === 'reasoning' && next.type === 'reasoning')
  ) {
    const text = held.text + next.text;
    return text.length <= maxStreamText ? { type: held.type, text } : undefined;
  }
  if (
    held.type === 'tool-input' &&
    next.type === 'tool-input' &&
    held.toolCallId === next.toolCallId
  ) {
    const delta = held.delta + next.delta;
    return delta.length <= maxStreamText ? { ...held, delta } : undefined;
  }
  return undefined;
}

function partChars(part: StreamPart): number {
  if (part.type === 'text' || part.type === 'reasoning') return part.text.length;
  if (part.type === 'tool-input') return part.delta.length;
  return 0;
}

/** A text cut into pieces a chunk holds. */
function pieces(text: string): string[] {
  const cut: string[] = [];
  for (let at = 0; at < text.length;) {
    let end = Math.min(text.length, at + maxStreamText);
    // Never between the two halves of a character outside the BMP (an emoji): each chunk is valid text.
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    cut.push(text.slice(at, end));
    at = end;
  }
  return cut;
}

const isStreamName = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= maxStreamName;

/**
 * A model's delta as the log keeps it: a text longer than a chunk holds is split, and one that is not a
 * delta at all (a model adapter's bug) is dropped, so a stream never refuses what the run goes on without.
 */
function fitted(part: ModelStreamPart): StreamPart[] {
  switch ((part as { type?: unknown } | null)?.type) {
    case 'text':
    case 'reasoning': {
      const { type, text } = part as { type: 'text' | 'reasoning'; text: unknown };
      return typeof text === 'string' ? pieces(text).map((piece) => ({ type, text: piece })) : [];
    }
    case 'tool-input-start': {
      const { toolCallId, toolName } = part as { toolCallId: unknown; toolName: unknown };
      return isStreamName(toolCallId) && isStreamName(toolName)
        ? [
            {
              type: 'tool-input-start',
              toolCallId: toolCallId as string,
              toolName: toolName as string,
            },
          ]
        : [];
    }
    case 'tool-input': {
      const { toolCallId, delta } = part as { toolCallId: unknown; delta: unknown };
      if (!isStreamName(toolCallId) || typeof delta !== 'string') return [];
      const id = toolCallId as string;
      return pieces(delta).map((piece) => ({ type: 'tool-input', toolCallId: id, delta: piece }));
    }
    default:
      return [];
  }
}
