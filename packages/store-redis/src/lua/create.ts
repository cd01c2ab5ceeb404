import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Registers a run unless its hash exists. ARGV: runId, kind, name, signature, snapshot JSON, status,
 * pub/sub channel. Returns {'created'|'exists', HGETALL}.
 */
export const createRun = lua(
  'create',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists', redis.call('HGETALL', KEYS[1])} end
local now = num(now_ms())
local order = order_us()
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'kind', ARGV[2], 'name', ARGV[3], 'signature', ARGV[4],
  'snapshot', ARGV[5], 'status', ARGV[6], 'epoch', '0', 'recoveries', '0', 'cancel', '0',
  'createdAt', now, 'updatedAt', now, 'order', order)
reindex(ARGV[1], nil, ARGV[6], order)
redis.call('PUBLISH', ARGV[7], ARGV[1])
return {'created', redis.call('HGETALL', KEYS[1])}
`,
);
