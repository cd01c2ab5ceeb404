import type { BenchContext } from './context.js';

/**
 * The environment of a bench worker process (`processes/worker-process.ts`) performing agent `name` in
 * `schema`, whose runs of 2 trips wait in their first tool call (for ten minutes, or until their run stops):
 * runs held in flight, for the takeover rows.
 */
export function heldRunsEnv(
  ctx: BenchContext,
  schema: string,
  name: string,
  owner: string,
): Record<string, string> {
  return {
    DATABASE_URL: ctx.url,
    CAIRN_SCHEMA: schema,
    OWNER: owner,
    AGENT_NAME: name,
    TRIPS: '2',
    TOOL_WAIT_MS: '600000',
    WAIT_FIRST_ONLY: '1',
  };
}
