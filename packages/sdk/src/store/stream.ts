import { CairnError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { Fence } from './contract.js';

/**
 * One piece of what a run says while it runs, as its model streams it, and how the tool calls it asked for
 * settled. A run's durable record stays its journaled answers and checkpoints; the stream is what a person
 * watches while they are made.
 */
export type StreamPart =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool-input-start'; toolCallId: string; toolName: string }
  | { type: 'tool-input'; toolCallId: string; delta: string }
  | ToolOutcomePart
  /**
   * Every earlier chunk of the same unit no longer counts: its call is being made again (a retry, or a new
   * holder after the one that made it was lost), and what it said is replaced by what follows.
   */
  | { type: 'superseded' }
  /**
   * A part stored encoded by a payload codec (`protectPayloads`): what it says is in `data`, readable only with
   * the codec. A store keeps it as it keeps any part; a reader without the codec shows it as encrypted.
   */
  | { type: 'sealed'; data: string };

/**
 * How a tool call the run made settled, said by the call's own unit once its outcome is journaled: `ok` with
 * its output (left out, `truncated`, when its JSON is longer than a chunk holds: the run's history has it),
 * `error` with the error's message, or `unknown`: it was in flight when its holder was lost, so it may or may
 * not have taken effect, and the model is told so. A later outcome for the same call replaces an earlier one
 * (a call made again after its holder was lost, before its outcome was journaled).
 */
export interface ToolOutcomePart {
  type: 'tool-outcome';
  toolCallId: string;
  outcome: 'ok' | 'error' | 'unknown';
  output?: JsonValue;
  truncated?: true;
  errorText?: string;
}

/** A chunk of a run's stream log. */
export interface StreamChunk {
  /** Its place in the run's stream: 1, 2, ... with no gap, never given to another chunk of the run. */
  position: number;
  /** The effect whose call said it (an agent's trip: the id of its model call), which a `superseded` names. */
  unit: string;
  part: StreamPart;
  /** When it was said, on the writing runtime's clock: milliseconds since the epoch. */
  at: number;
}

/** What `StreamStore.readStream` reads. */
export interface StreamReadOptions {
  /** Only chunks after this position. @defaultValue 0, from the first */
  after?: number;
  /** At most this many chunks. @defaultValue 1000 (and never more than 10,000) */
  limit?: number;
}

/** The most chunks one `readStream` returns. */
export const maxStreamRead = 10_000;
/** The longest unit name and tool call id or name a chunk may carry. */
export const maxStreamName = 200;
/** The longest text one chunk carries: a runtime coalesces deltas into chunks far smaller than this. */
export const maxStreamText = 64_000;
/** The longest encoded part (`sealed`): a part of the largest size, deflated or not, encrypted and in base 85. */
export const maxSealedStreamData = 600_000;

/**
 * A run's stream log: chunks appended in order under the holder's fence, so a holder that lost its lease
 * appends nothing, and read from any position. Deleted with the run.
 */
export interface StreamStore {
  /**
   * Appends chunks in order, atomically, under the fence (refused with `LeaseLostError` as every fenced write
   * is, a run in a final status included). Chunks at or below the run's highest position are skipped, so an
   * append retried after an unknown outcome never adds a chunk twice; the first one kept must be the next
   * position, and each the next after it (`INVALID_ARGUMENT` otherwise, writing nothing).
   */
  appendStream(fence: Fence, chunks: readonly StreamChunk[]): Promise<void>;
  /** The run's chunks after `after`, in order; empty for an unknown run. */
  readStream(runId: string, options?: StreamReadOptions): Promise<StreamChunk[]>;
  /** The highest position in the run's stream: 0 when it has none (or the run is unknown). */
  streamPosition(runId: string): Promise<number>;
}

/**
 * Checks chunks a holder appends: each a well-formed part, positions one apart. A store calls it before it
 * writes, so a bad chunk is `INVALID_ARGUMENT` on every store alike.
 */
export function checkStreamChunks(runId: string, chunks: readonly StreamChunk[]): void {
  chunks.forEach((chunk, i) => {
    const problem = chunkProblem(chunk);
    if (problem !== undefined) {
      throw new CairnError('INVALID_ARGUMENT', `Stream chunk ${i} of run "${runId}" ${problem}.`, {
        data: { runId, index: i },
      });
    }
    if (i > 0 && chunk.position !== chunks[i - 1]!.position + 1) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `Stream chunks of run "${runId}" must follow each other: position ${chunk.position} after ${chunks[i - 1]!.position}.`,
        { data: { runId, index: i } },
      );
    }
  });
}

/**
 * The chunks an append keeps given the run's highest stored position: those above it, which must start at
 * the next position. Throws `INVALID_ARGUMENT` for a gap.
 */
export function streamChunksToKeep(
  runId: string,
  highest: number,
  chunks: readonly StreamChunk[],
): readonly StreamChunk[] {
  const kept = chunks.filter((chunk) => chunk.position > highest);
  if (kept.length > 0 && kept[0]!.position !== highest + 1)
    throw streamGapError(runId, highest, kept[0]!.position);
  return kept;
}

/** The error of an append that would leave a gap in a run's stream. */
export function streamGapError(runId: string, highest: number, position: number): CairnError {
  return new CairnError(
    'INVALID_ARGUMENT',
    `Run "${runId}"'s stream ends at position ${highest}: an append must go on from ${highest + 1}, not ${position}.`,
    { data: { runId, highest, position } },
  );
}

/** The `limit` a read uses. */
export function streamReadLimit(options: StreamReadOptions | undefined): number {
  const limit = options?.limit ?? 1_000;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `A stream read's limit must be a positive integer, not ${limit}.`,
    );
  }
  return Math.min(limit, maxStreamRead);
}

/** The `after` a read uses. */
export function streamReadAfter(options: StreamReadOptions | undefined): number {
  const after = options?.after ?? 0;
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `A stream position is a whole number from 0, not ${after}.`,
    );
  }
  return after;
}

const isName = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= maxStreamName;

function chunkProblem(chunk: StreamChunk): string | undefined {
  if (typeof chunk !== 'object' || chunk === null) return 'is not an object';
  if (!Number.isSafeInteger(chunk.position) || chunk.position < 1) return 'has no position from 1';
  if (!isName(chunk.unit)) return `has no unit (a name of 1 to ${maxStreamName} characters)`;
  if (!Number.isFinite(chunk.at)) return 'has no time';
  const part = chunk.part as Partial<Record<string, unknown>> | null;
  if (typeof part !== 'object' || part === null) return 'has no part';
  const text = (value: unknown) => typeof value === 'string' && value.length <= maxStreamText;
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return text(part.text) ? undefined : `has no text of at most ${maxStreamText} characters`;
    case 'tool-input-start':
      return isName(part.toolCallId) && isName(part.toolName) ? undefined : 'names no tool call';
    case 'tool-input':
      return isName(part.toolCallId) && text(part.delta) ? undefined : 'has no tool input';
    case 'tool-outcome':
      return toolOutcomeProblem(part);
    case 'superseded':
      return undefined;
    case 'sealed':
      return typeof part.data === 'string' && part.data.length <= maxSealedStreamData
        ? undefined
        : `has no encoded data of at most ${maxSealedStreamData} characters`;
    default:
      return `has an unknown part type ${JSON.stringify(part.type)}`;
  }
}

function toolOutcomeProblem(part: Partial<Record<string, unknown>>): string | undefined {
  if (!isName(part.toolCallId)) return 'names no tool call';
  if (part.outcome !== 'ok' && part.outcome !== 'error' && part.outcome !== 'unknown')
    return 'has no tool outcome (ok, error or unknown)';
  if (
    part.errorText !== undefined &&
    !(typeof part.errorText === 'string' && part.errorText.length <= maxStreamText)
  )
    return `has an error text that is not text of at most ${maxStreamText} characters`;
  if (part.output !== undefined && !fitsChunk(part.output))
    return `has a tool output whose JSON is not at most ${maxStreamText} characters`;
  return undefined;
}

/** Whether a value's JSON fits one chunk. */
export function fitsChunk(value: unknown): boolean {
  try {
    const json = JSON.stringify(value) as string | undefined;
    return json !== undefined && json.length <= maxStreamText;
  } catch {
    return false;
  }
}
