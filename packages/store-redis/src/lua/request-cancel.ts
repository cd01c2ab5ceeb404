import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Flags a run that has not ended for cancellation; never a child run, which stops with its root. A waiting run
 * has no holder to see the flag: it becomes claimable (reindex) and workers are told on ARGV[1], the channel,
 * so one claims and cancels it. Returns 1 when the flag was set, else 0.
 */
export const requestCancel = lua(
  'request-cancel',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local h = redis.call('HMGET', KEYS[1], 'status', 'rootId')
if terminal[h[1]] or h[2] then return 0 end
redis.call('HSET', KEYS[1], 'cancel', '1', 'updatedAt', num(now_ms()))
reindex()
if h[1] == 'waiting' then redis.call('PUBLISH', ARGV[1], redis.call('HGET', KEYS[1], 'runId')) end
return 1
`,
);
