import { lua } from '../client.js';

/**
 * Renews a store instance's liveness in one bucket: KEYS[1] the bucket's `live` set. ARGV[1] the instance,
 * ARGV[2] how long it lives on from now (ms, server clock), or '0' to end it now (a store closing: the takeover
 * grace counts from here). Only an instance already in the set is written (`XX`): the claim that gave it a run in
 * the bucket put it there, and it left once it held nothing more there (its runs released or taken over), so a
 * renewal never brings back an instance that holds nothing. A renewal never shortens a liveness (`GT`).
 * Returns the instance's liveness end after the write (ms, server clock), or 0 when it is not in the set.
 */
export const keepAlive = lua(
  'keep-alive',
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
if ARGV[2] == '0' then
  if tonumber(score) > now then redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', now), ARGV[1]) end
else
  redis.call('ZADD', KEYS[1], 'XX', 'GT', string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
end
return tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
`,
);
