import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * A fenced status change that keeps the snapshot and the journal. ARGV[5..]: status, error JSON or ''.
 * Returns {'missing'|'stale'|'late'} or {'ok', old status, order}.
 */
export const updateRunStatus = lua(
  'update-status',
  `${prelude}
local refused = fence()
if refused then return {refused} end
local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'order')
redis.call('HSET', KEYS[1], 'status', ARGV[5], 'updatedAt', num(now_ms()))
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[6]) else redis.call('HDEL', KEYS[1], 'error') end
settle(ARGV[5])
reindex(h[1], h[2], ARGV[5], h[3])
return {'ok', h[2], h[3]}
`,
);
