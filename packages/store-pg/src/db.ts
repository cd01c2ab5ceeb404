import type { Sql } from 'postgres';

/** Any `postgres()` instance, reserved connection or transaction: statements only need `unsafe`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Pick<Sql<any>, 'unsafe'>;

/** A `postgres()` instance the caller owns. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnySql = Sql<any>;

/**
 * Runs one parameterized statement and returns its rows as arrays of values. Rows come back as arrays and
 * JSON as text so a user's `transform` option (camel case, ...) never renames columns or snapshot keys. The
 * statement is prepared once per connection and then sent in one round trip, unless the caller's
 * `postgres()` has `prepare: false` (as a transaction-pooling proxy needs).
 */
export async function query(
  db: Db,
  text: string,
  params: readonly unknown[] = [],
): Promise<unknown[][]> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const rows = await db.unsafe(text, params as any[], { prepare: true }).values();
  return rows as unknown as unknown[][];
}

/** JSON for a `$n::text::jsonb` parameter; `undefined` becomes SQL NULL. */
export function jsonParam(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}
