import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * A fenced status change that keeps the snapshot and the journal. Writing the final status the run already
 * has again is a retry: it changes nothing. Never `waiting` (the store refuses it first): it clears the wait.
 * ARGV[7..]: status, error JSON or ''.
 * Returns a refusal (see `fence`) or {'ok'}. Every path reindexes the run from what is stored,
 * so a retry leaves its indexes exact.
 */
export const updateRunStatus = lua(
  'update-status',
  `${prelude}
local refused = fence(ARGV[7])
if refused then
  reindex()
  return refused
end
if terminal[redis.call('HGET', KEYS[1], 'status')] then
  reindex()
  return {'ok'}
end
redis.call('HSET', KEYS[1], 'status', ARGV[7], 'updatedAt', num(now_ms()))
clear_wait()
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[8]) else redis.call('HDEL', KEYS[1], 'error') end
settle(ARGV[7])
reindex()
return {'ok'}
`,
);
