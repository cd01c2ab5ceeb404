import type { Sql } from 'postgres';

/** Statements sent through a counted `postgres()` instance, and the bytes of their parameters. */
export interface SqlCounts {
  statements: number;
  paramBytes: number;
}

/**
 * Wraps a `postgres()` instance so every `unsafe(text, params)` statement (all a store sends) is counted
 * with the size of its parameters as sent (strings by their UTF-8 length, other values by their text).
 * Everything else passes through unchanged.
 */
export function countingSql(sql: Sql): { sql: Sql; counts: SqlCounts } {
  const counts: SqlCounts = { statements: 0, paramBytes: 0 };
  const counted = new Proxy(sql, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property !== 'unsafe' || typeof value !== 'function') return value;
      return (text: string, params: unknown[] = [], ...rest: unknown[]) => {
        counts.statements += 1;
        for (const param of params) {
          if (param === null || param === undefined) continue;
          counts.paramBytes += Buffer.byteLength(typeof param === 'string' ? param : String(param));
        }
        return (value as (...args: unknown[]) => unknown).call(target, text, params, ...rest);
      };
    },
  });
  return { sql: counted, counts };
}
