import { query, type Db } from '../db.js';

/**
 * A subject's key, made with the given id and key if it has no row yet: `{ keyId, key }` (base64), `null` once
 * the subject was forgotten, or `undefined` when another transaction made or forgot the subject's row after this
 * statement's snapshot (the insert met its row and the read could not see it): ask again.
 */
export async function keyringCurrent(
  db: Db,
  table: string,
  subjectHash: string,
  newId: string,
  newKey: string,
): Promise<{ keyId: string; key: string } | null | undefined> {
  const rows = await query(
    db,
    `WITH made AS (
       INSERT INTO ${table} (subject_hash, key_id, key)
       SELECT $1::text, $2::text, decode($3::text, 'base64')
        WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE subject_hash = $1::text)
       ON CONFLICT (subject_hash) DO NOTHING
       RETURNING key_id, key)
     SELECT key_id, encode(key, 'base64') FROM made
     UNION ALL
     SELECT key_id, encode(key, 'base64') FROM ${table}
      WHERE subject_hash = $1::text AND NOT EXISTS (SELECT 1 FROM made)`,
    [subjectHash, newId, newKey],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  const [keyId, key] = row as [string | null, string | null];
  return keyId === null || key === null ? null : { keyId, key };
}
