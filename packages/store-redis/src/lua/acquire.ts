import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Claims a run: `SET lease token NX PX ttl` when the lease key is gone, bumping the epoch in the same script.
 * The token is `epoch:nonce:owner` with a fresh random nonce, so no token is ever issued twice, even when lost
 * data makes an epoch number come round again. A child run (claimed only by adoption) and a run in a final
 * status are never claimed.
 * ARGV: owner, ttl ms, nonce, reclaimOwn ('1' or '0').
 * Returns {'missing'}, {'held'}, {'child'}, {'ended'} or
 * {'ok', epoch, leaseUntil, recoveries, cancel, token, incarnation, takenFrom} (takenFrom: the holder that never
 * released, or false).
 */
export const acquireLease = lua(
  'acquire',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local owner, ttl, reclaim = ARGV[1], tonumber(ARGV[2]), ARGV[4] == '1'
local h = redis.call('HMGET', KEYS[1], 'epoch', 'owner', 'leaseUntil', 'recoveries', 'cancel', 'status',
  'rootId', 'incarnation')
if h[7] then return {'child'} end
if terminal[h[6]] then return {'ended'} end
local now = now_ms()
local current = redis.call('GET', KEYS[3])
local mine = reclaim and h[2] == owner
if current then
  if not (mine and token_owner(current) == owner) then return {'held'} end
elseif h[2] and h[3] and tonumber(h[3]) > now and not mine then
  return {'held'}
end
local epoch = num(tonumber(h[1]) + 1)
local recoveries = tonumber(h[4])
if h[2] then recoveries = recoveries + 1 end
local token = epoch .. ':' .. ARGV[3] .. ':' .. owner
if current then
  redis.call('SET', KEYS[3], token, 'XX', 'PX', ttl)
else
  redis.call('SET', KEYS[3], token, 'NX', 'PX', ttl)
end
local lease_until = num(now + ttl)
redis.call('HSET', KEYS[1], 'epoch', epoch, 'owner', owner, 'leaseUntil', lease_until, 'token', token,
  'recoveries', num(recoveries), 'updatedAt', num(now))
reindex()
return {'ok', epoch, lease_until, num(recoveries), h[5], token, h[8], h[2]}
`,
);
