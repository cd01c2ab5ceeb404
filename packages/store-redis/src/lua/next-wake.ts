import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * One bucket's earliest wait time, read-only: KEYS[1] the bucket's waits set (waiting root runs that wait for a
 * time, scored by it). ARGV[1] the bucket's run key prefix, ARGV[2] its lease key prefix (the runs are read by
 * key: same hash tag, so same slot), ARGV[3] the lowest score to read ('-inf', or '(' and a time: only later
 * ones), ARGV[4..] the definitions as pairs of kind and name. Reads the set from that score, a page at a time,
 * and stops at the first run of a wanted definition not held by a live lease: O(the entries of other
 * definitions, or held, before it).
 * Returns that run's wait time (ms, the runtime's clock), or false.
 */
export const nextWakeTime = lua(
  'next-wake',
  `${prelude}
local now = now_ms()
local wanted = {}
for i = 4, #ARGV, 2 do wanted[#ARGV[i] .. ':' .. ARGV[i] .. ARGV[i + 1]] = true end
local page, offset = 64, 0
while true do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[3], '+inf', 'WITHSCORES', 'LIMIT', offset, page)
  for i = 1, #ids, 2 do
    local id = ids[i]
    local h = redis.call('HMGET', ARGV[1] .. id, 'kind', 'name', 'status', 'rootId', 'owner', 'leaseUntil')
    if h[1] and wanted[#h[1] .. ':' .. h[1] .. h[2]] and h[3] == 'waiting' and not h[4] then
      local free = redis.call('EXISTS', ARGV[2] .. id) == 0
        and not (h[5] and h[6] and tonumber(h[6]) > now)
      if free then return ids[i + 1] end
    end
  end
  if #ids < 2 * page then return false end
  offset = offset + page
end
`,
);
