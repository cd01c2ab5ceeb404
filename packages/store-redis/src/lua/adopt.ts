import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Raises a child run's epoch to its parent's when it is not higher, recording the parent's owner, lease end
 * and a token for the child's writes; refused when the adoption reached the server after the parent lease's
 * end. ARGV: parent epoch, owner, leaseUntil, token, deadline ms.
 * Returns {'missing'}, {'newer'}, {'late'} or {'ok'}.
 */
export const adoptRun = lua(
  'adopt',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
if tonumber(redis.call('HGET', KEYS[1], 'epoch')) > tonumber(ARGV[1]) then return {'newer'} end
local now = now_ms()
if now >= tonumber(ARGV[5]) then return {'late'} end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'owner', ARGV[2], 'leaseUntil', ARGV[3], 'token', ARGV[4],
  'updatedAt', num(now))
return {'ok'}
`,
);
