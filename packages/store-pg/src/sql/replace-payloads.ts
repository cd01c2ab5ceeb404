import { query, type Db } from '../db.js';
import type { Names } from '../names.js';

/**
 * Replaces payload strings wherever a run at this incarnation keeps them, through the schema's `replace_payloads`
 * function (migration 000010), which an operator can also call: one statement, atomic against the holder's
 * writes because the function locks the run's row `FOR UPDATE` first, as every fenced write does, and then
 * touches only that run's rows (so it cannot deadlock with them). Not fenced: the holder keeps its lease and goes
 * on. How many of the replaced strings it found; 0 for an unknown run or another incarnation. The caller checks
 * the replacements first (`checkReplacements`); the function refuses what would not be exact too (22023).
 */
export async function replacePayloads(
  db: Db,
  names: Names,
  runId: string,
  incarnation: string,
  replacements: ReadonlyMap<string, string>,
): Promise<number> {
  const rows = await query(
    db,
    `SELECT ${names.replacePayloads}($1::text, $2::text, $3::text[], $4::text[])`,
    [runId, incarnation, [...replacements.keys()], [...replacements.values()]],
  );
  return rows[0]![0] as number;
}
