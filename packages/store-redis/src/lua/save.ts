import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * A fenced checkpoint: replaces status, signature, snapshot, output and error, and empties the journal.
 * ARGV[5..]: status, signature, snapshot JSON, output JSON or '', error JSON or ''.
 * Returns {'missing'|'stale'|'late'} or {'ok', old status, order}.
 */
export const saveCheckpoint = lua(
  'save',
  `${prelude}
local refused = fence()
if refused then return {refused} end
local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'order')
redis.call('HSET', KEYS[1], 'status', ARGV[5], 'signature', ARGV[6], 'snapshot', ARGV[7],
  'updatedAt', num(now_ms()))
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'output', ARGV[8]) else redis.call('HDEL', KEYS[1], 'output') end
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[9]) else redis.call('HDEL', KEYS[1], 'error') end
redis.call('DEL', KEYS[2])
settle(ARGV[5])
reindex(h[1], h[2], ARGV[5], h[3])
return {'ok', h[2], h[3]}
`,
);
