import type { StreamChunk, StreamPart } from './store/stream.js';

/** What a stream says once superseded chunks are dropped: each unit's parts that still count, in order. */
export interface StreamFold {
  /** Units in the order they first said something that still counts, each with those parts. */
  units: Array<{ unit: string; parts: StreamPart[] }>;
  /** The text of every unit that still counts, in that order. */
  text: string;
  /** The positions of the chunks a `superseded` marker dropped. */
  superseded: number[];
}

/**
 * Folds stream chunks, in position order, into what still counts: a `superseded` marker drops every earlier
 * chunk of its unit. A client that showed those chunks replaces them by what follows.
 */
export function foldStream(chunks: readonly StreamChunk[]): StreamFold {
  const byUnit = new Map<string, StreamChunk[]>();
  const superseded: number[] = [];
  for (const chunk of chunks) {
    if (chunk.part.type === 'superseded') {
      superseded.push(...(byUnit.get(chunk.unit) ?? []).map((dropped) => dropped.position));
      byUnit.delete(chunk.unit);
      continue;
    }
    const kept = byUnit.get(chunk.unit) ?? [];
    kept.push(chunk);
    byUnit.set(chunk.unit, kept);
  }
  const units = [...byUnit]
    .sort(([, a], [, b]) => a[0]!.position - b[0]!.position)
    .map(([unit, kept]) => ({ unit, parts: kept.map((chunk) => chunk.part) }));
  const text = units
    .flatMap(({ parts }) => parts)
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join('');
  return { units, text, superseded: superseded.sort((a, b) => a - b) };
}
