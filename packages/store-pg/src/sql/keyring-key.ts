import { query, type Db } from '../db.js';

/** The key (base64) with this id, or undefined once its subject was forgotten or when it never existed. */
export async function keyringKey(
  db: Db,
  table: string,
  keyId: string,
): Promise<string | undefined> {
  const rows = await query(
    db,
    `SELECT encode(key, 'base64') FROM ${table} WHERE key_id = $1::text AND key IS NOT NULL`,
    [keyId],
  );
  return (rows[0]?.[0] as string | undefined) ?? undefined;
}
