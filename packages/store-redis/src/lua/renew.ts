import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Extends a lease while the run is still the incarnation named and its lease key still holds the holder's
 * token (or, for a holder that did not claim through this store instance, a token of the same epoch and
 * owner), and only if the renewal reached the server before the lease's end as the holder knows it.
 * ARGV: token or '', epoch, owner, ttl ms, deadline ms, incarnation.
 * Returns {'lost'}, {'late'} or {'ok', leaseUntil, cancel}.
 */
export const renewLease = lua(
  'renew',
  `${prelude}
local current = redis.call('GET', KEYS[3])
if not current then return {'lost'} end
if ARGV[1] ~= '' then
  if current ~= ARGV[1] then return {'lost'} end
elseif string.match(current, '^(%d+):') ~= ARGV[2] or token_owner(current) ~= ARGV[3] then
  return {'lost'}
end
local h = redis.call('HMGET', KEYS[1], 'epoch', 'cancel', 'incarnation')
if h[1] ~= ARGV[2] or h[3] ~= ARGV[6] then return {'lost'} end
local now = now_ms()
if now >= tonumber(ARGV[5]) then return {'late'} end
redis.call('PEXPIRE', KEYS[3], ARGV[4])
local lease_until = num(now + tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'leaseUntil', lease_until)
reindex()
return {'ok', lease_until, h[2]}
`,
);
