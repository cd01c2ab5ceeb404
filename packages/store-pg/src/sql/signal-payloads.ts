import type { KeptSignalPayload } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Every signal row a run's incarnation keeps, in seq order: its mailbox, the consumed signals kept for their key
 * (those without one are deleted when consumed) and its decisions (`cairn.approval`, always keyed). Empty for an
 * unknown run. The payload is read as text: a `transform` on the caller's client never reaches it.
 */
export async function signalPayloads(
  db: Db,
  names: Names,
  runId: string,
): Promise<KeptSignalPayload[]> {
  const rows = await query(
    db,
    `SELECT s.name, s.payload::text
       FROM ${names.runs} r JOIN ${names.signals} s ON s.run_seq = r.created_seq
      WHERE r.run_id = $1::text
      ORDER BY s.seq`,
    [runId],
  );
  return rows.map(([name, payload]) => ({
    name: name as string,
    payload: JSON.parse(payload as string) as KeptSignalPayload['payload'],
  }));
}
