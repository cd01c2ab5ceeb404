import type { BenchContext } from './context.js';

/** Where a bench worker process keeps its runs: a Postgres schema of the bench's database, or a Redis key prefix. */
export type StoreTarget =
  { store: 'pg'; schema: string } | { store: 'redis'; url: string; prefix: string };

/** The environment that points a bench worker process (`processes/worker-process.ts`) at `target`. */
function storeEnv(ctx: BenchContext, target: StoreTarget): Record<string, string> {
  return target.store === 'pg'
    ? { DATABASE_URL: ctx.url, CAIRN_SCHEMA: target.schema }
    : { STORE: 'redis', REDIS_URL: target.url, CAIRN_PREFIX: target.prefix };
}

/**
 * The environment of a bench worker process performing agent `name` on `target`, whose runs of 2 trips wait in
 * their first tool call (for ten minutes, or until their run stops): runs held in flight, for the takeover rows.
 */
export function heldRunsEnv(
  ctx: BenchContext,
  target: StoreTarget,
  name: string,
  owner: string,
): Record<string, string> {
  return {
    ...storeEnv(ctx, target),
    OWNER: owner,
    AGENT_NAME: name,
    TRIPS: '2',
    TOOL_WAIT_MS: '600000',
    WAIT_FIRST_ONLY: '1',
  };
}
