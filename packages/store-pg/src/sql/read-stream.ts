import { snapshotInvalidError, type StreamChunk, type StreamPart } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * The chunks of a run's stream after position `after`, at most `limit`, in order: a range of the primary key of
 * its current incarnation. Empty for an unknown run. A read sees whole appends only (each is one statement), so
 * what it returns is a prefix of the stream with no gap.
 */
export async function readStream(
  db: Db,
  names: Names,
  runId: string,
  after: number,
  limit: number,
): Promise<StreamChunk[]> {
  const rows = await query(
    db,
    `SELECT s.position::float8, s.unit, s.part, s.at
       FROM ${names.runs} r JOIN ${names.runStream} s ON s.run_seq = r.created_seq
      WHERE r.run_id = $1::text AND s.position > $2::bigint
      ORDER BY s.position
      LIMIT $3::int`,
    [runId, after, limit],
  );
  return rows.map(([position, unit, part, at]) => ({
    position: position as number,
    unit: unit as string,
    part: partOf(runId, position as number, part as string),
    at: at as number,
  }));
}

function partOf(runId: string, position: number, text: string): StreamPart {
  try {
    return JSON.parse(text) as StreamPart;
  } catch {
    throw snapshotInvalidError(runId, `its stream chunk at position ${position} is not JSON`);
  }
}
