import {
  CairnError,
  checkStreamChunks,
  streamGapError,
  streamReadAfter,
  streamReadLimit,
  type JsonObject,
  type StreamChunk,
  type StreamPart,
  type StreamStore,
} from '@cairn/sdk';
import type { StoreContext } from './context.js';
import type { FencedWrite } from './fenced.js';
import { appendStreamChunks } from './lua/append-stream.js';
import { hashFields } from './record.js';

/** `STORE_FAILED` for a stream entry the store did not write so (a hand edit, another program). */
function corruptedEntry(runId: string, why: string, data: JsonObject): CairnError {
  return new CairnError(
    'STORE_FAILED',
    `The stream of run "${runId}" in Redis holds what the store did not write: ${why}.`,
    { data: { runId, ...data } },
  );
}

/** The position of a stream entry's id, which the store writes as `<position>-0`; undefined for another id. */
function positionOf(id: string): number | undefined {
  const match = /^(\d+)-0$/.exec(id);
  const position = match === null ? Number.NaN : Number(match[1]);
  return Number.isSafeInteger(position) && position >= 1 ? position : undefined;
}

function entryPosition(runId: string, id: string): number {
  const position = positionOf(id);
  if (position === undefined)
    throw corruptedEntry(runId, `an entry has the id "${id}", not <position>-0`, { entryId: id });
  return position;
}

/**
 * The chunk of one `XRANGE` entry, which must be at `expected` (positions are dense from 1). Anything else is
 * `STORE_FAILED` with `data.position` the position that cannot be read: reading on from `after: position`
 * skips it. A part is only checked to be an object with a `type`, so parts of a newer sdk still read.
 */
function toChunk(runId: string, entry: unknown, expected: number): StreamChunk {
  const [id, rawFields] = Array.isArray(entry) ? entry : [];
  const entryId = String(id);
  const position = entryPosition(runId, entryId);
  if (position !== expected) {
    const why = `position ${expected} is missing (the next entry is "${entryId}")`;
    throw corruptedEntry(runId, why, { position: expected, entryId });
  }
  const fields = hashFields(rawFields);
  const unit = fields.get('unit');
  const at = Number(fields.get('at'));
  let part: unknown;
  try {
    part = JSON.parse(fields.get('part') ?? '');
  } catch {
    part = undefined;
  }
  const typed =
    typeof part === 'object' &&
    part !== null &&
    typeof (part as Record<string, unknown>).type === 'string';
  if (unit === undefined || unit === '' || !Number.isFinite(at) || !typed) {
    throw corruptedEntry(runId, `the entry at position ${position} has no unit, time or part`, {
      position,
      entryId,
    });
  }
  return { position, unit, part: part as StreamPart, at };
}

/**
 * The stream half of the store: a run's chunks in a Redis Stream under its bucket's hash tag, appended by one
 * fenced script and read with `XRANGE`. The stream goes with the run: `delete`, `prune`, `create` replacing a
 * stale child and `settledTtlMs` take it in the script that takes the run hash, so an id created again starts
 * with none. Reads first await `layoutCurrent`, as every read of a run does.
 */
export function streamOperations(
  ctx: StoreContext,
  fenced: FencedWrite,
  layoutCurrent: () => Promise<void>,
): StreamStore {
  const { gate, keys } = ctx;
  return {
    async appendStream(fence, chunks) {
      checkStreamChunks(fence.runId, chunks);
      const reply = await fenced(
        'append to a stream',
        appendStreamChunks,
        fence,
        chunks.flatMap((chunk) => [
          String(chunk.position),
          chunk.unit,
          JSON.stringify(chunk.part),
          String(chunk.at),
        ]),
        ['gap'],
      );
      if (reply[0] === 'gap') throw streamGapError(fence.runId, Number(reply[1]), Number(reply[2]));
    },

    async readStream(runId, options) {
      const after = streamReadAfter(options);
      const limit = streamReadLimit(options);
      await layoutCurrent();
      const entries = await gate.call('read a stream', (client) =>
        client.xrange(keys.run(runId).stream, `${after + 1}-0`, '+', 'COUNT', limit),
      );
      return entries.map((entry, i) => toChunk(runId, entry, after + i + 1));
    },

    async streamPosition(runId) {
      await layoutCurrent();
      const [last] = await gate.call('read a stream position', (client) =>
        client.xrevrange(keys.run(runId).stream, '+', '-', 'COUNT', 1),
      );
      return last === undefined ? 0 : entryPosition(runId, String(last[0]));
    },
  };
}
