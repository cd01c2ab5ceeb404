import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * A fenced status change that keeps the snapshot and the journal. Writing the final status the run already
 * has again is a retry: it changes nothing. ARGV[7..]: status, error JSON or ''.
 * Returns a refusal (see `fence`) or {'ok', old status, order}.
 */
export const updateRunStatus = lua(
  'update-status',
  `${prelude}
local refused = fence(ARGV[7])
if refused then return refused end
local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'order')
if terminal[h[2]] then return {'ok', h[2], h[3]} end
redis.call('HSET', KEYS[1], 'status', ARGV[7], 'updatedAt', num(now_ms()))
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[8]) else redis.call('HDEL', KEYS[1], 'error') end
settle(ARGV[7])
reindex(h[1], h[2], ARGV[7], h[3])
return {'ok', h[2], h[3]}
`,
);
