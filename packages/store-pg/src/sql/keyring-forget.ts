import { query, type Db } from '../db.js';

/**
 * Forgets a subject: its key and key id deleted, its row kept (the hash of its id) so no key is made for it
 * again. A key being made for it meanwhile is waited for (the primary key's lock), then deleted.
 */
export async function keyringForget(db: Db, table: string, subjectHash: string): Promise<void> {
  await query(
    db,
    `INSERT INTO ${table} (subject_hash, key_id, key, forgotten_at) VALUES ($1::text, NULL, NULL, now())
     ON CONFLICT (subject_hash) DO UPDATE
       SET key_id = NULL, key = NULL, forgotten_at = COALESCE(${table}.forgotten_at, now())`,
    [subjectHash],
  );
}
