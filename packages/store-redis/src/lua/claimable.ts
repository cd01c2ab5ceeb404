import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * One bucket's claimable runs, read-only. KEYS[1] is the bucket's claimable set. The script reads the runs it
 * names by key (ARGV[1] the bucket's run key prefix, ARGV[2] its lease key prefix, followed by the id): they
 * are not declared in KEYS as they are only known from the set, but they share its hash tag, so Cluster serves
 * them from the same slot.
 * ARGV[3] limit, ARGV[4] an owner whose runs count as free ('' for none), ARGV[5..] the definitions as pairs of
 * kind and name.
 *
 * Without an owner it reads only the entries already due (score up to now, in µs), a page at a time, until
 * `limit` pass: those of other definitions are skipped, and a record that disagrees with its score (still
 * leased) is never returned. With an owner the entries not yet due are read too, since that owner's held runs
 * count, and all of them, since they are not in creation order: the slower path a restarted worker takes,
 * O(the bucket's held runs).
 * Returns a flat list of id, sort key: the score (oldest first), or with an owner the creation order, so held
 * and free runs come in the order they were created.
 */
export const claimableRuns = lua(
  'claimable',
  `${prelude}
local t = redis.call('TIME')
local now_us = t[1] .. string.format('%06d', tonumber(t[2]))
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, reclaim = tonumber(ARGV[3]), ARGV[4]
local wanted = {}
for i = 5, #ARGV, 2 do wanted[#ARGV[i] .. ':' .. ARGV[i] .. ARGV[i + 1]] = true end
local found = {}
local upto = now_us
if reclaim ~= '' then upto = '+inf' end
local page, offset = math.max(limit, 32), 0
local function enough() return reclaim == '' and #found >= 2 * limit end
while true do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', upto, 'WITHSCORES', 'LIMIT', offset, page)
  for i = 1, #ids, 2 do
    local id = ids[i]
    local h = redis.call('HMGET', ARGV[1] .. id, 'kind', 'name', 'status', 'rootId', 'owner', 'leaseUntil',
      'order')
    if h[1] and wanted[#h[1] .. ':' .. h[1] .. h[2]] and claimable[h[3]] and not h[4] then
      local free = redis.call('EXISTS', ARGV[2] .. id) == 0
        and not (h[5] and h[6] and tonumber(h[6]) > now)
      if free or (reclaim ~= '' and h[5] == reclaim) then
        found[#found + 1] = id
        found[#found + 1] = reclaim == '' and ids[i + 1] or h[7]
        if enough() then break end
      end
    end
  end
  if #ids < 2 * page or enough() then break end
  offset = offset + page
end
return found
`,
);
