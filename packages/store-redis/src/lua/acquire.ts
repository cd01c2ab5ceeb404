import { lua } from '../client.js';
import { heldKey, liveKey, prelude } from './prelude.js';

/**
 * Claims a run: `SET lease token NX PX ttl` when the lease key is gone, bumping the epoch in the same script.
 * The token is `epoch:nonce:owner` with a fresh random nonce, so no token is ever issued twice, even when lost
 * data makes an epoch number come round again. A child run (claimed only by adoption) and a run in a final
 * status are never claimed.
 *
 * A lease still running does not keep the run when its holder instance's liveness (its score in the bucket's
 * `live` set, in the run's slot, read in this same script) ended at least the grace ago on the server's clock:
 * the lease key is then overwritten, the epoch bumped, and the holder's every later write refused by the
 * fence. A holder that renewed its liveness within the grace keeps the run; one with no liveness recorded
 * (lease-only, or none read) keeps it until its lease runs out. A claimer that keeps a liveness records itself
 * as the run's holder.
 * ARGV: owner, ttl ms, nonce, reclaimOwn ('1' or '0'), this instance ('' when it keeps no liveness), its
 * liveness's length in ms, the takeover grace in ms ('' to take no run by its holder's liveness).
 * Returns {'missing'}, {'held'}, {'child'}, {'ended'} or
 * {'ok', epoch, leaseUntil, recoveries, cancel, token, incarnation, takenFrom} (takenFrom: the holder that never
 * released, or false).
 */
export const acquireLease = lua(
  'acquire',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local owner, ttl, reclaim, instance = ARGV[1], tonumber(ARGV[2]), ARGV[4] == '1', ARGV[5]
local h = redis.call('HMGET', KEYS[1], 'epoch', 'owner', 'leaseUntil', 'recoveries', 'cancel', 'status',
  'rootId', 'incarnation', 'holder', 'runId')
if h[7] then return {'child'} end
if terminal[h[6]] then return {'ended'} end
local now = now_ms()
local holder = h[9]
local gone = false
if ARGV[7] ~= '' and h[2] and holder and holder ~= instance then
  local alive_until = redis.call('ZSCORE', KEYS[${liveKey}], holder)
  gone = alive_until ~= false and now >= tonumber(alive_until) + tonumber(ARGV[7])
end
local current = redis.call('GET', KEYS[3])
local mine = reclaim and h[2] == owner
if current then
  if not (mine and token_owner(current) == owner) and not gone then return {'held'} end
elseif h[2] and h[3] and tonumber(h[3]) > now and not mine and not gone then
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
if holder and holder ~= instance then unhold(holder, h[10]) end
if instance ~= '' then
  redis.call('HSET', KEYS[1], 'holder', instance)
  redis.call('ZADD', KEYS[${heldKey}], 0, held_entry(instance, h[10]))
  redis.call('ZADD', KEYS[${liveKey}], 'GT', num(now + tonumber(ARGV[6])), instance)
else
  redis.call('HDEL', KEYS[1], 'holder')
end
reindex()
return {'ok', epoch, lease_until, num(recoveries), h[5], token, h[8], h[2]}
`,
);
