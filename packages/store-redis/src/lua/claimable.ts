import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * One bucket's claimable runs. KEYS[1] is the bucket's claimable set, KEYS[2] its waits set, KEYS[3] its `live`
 * set and KEYS[4] its `held` set. The script reads the runs they name by key (ARGV[1] the bucket's run key
 * prefix, ARGV[2] its lease key prefix, followed by the id): they are not declared in KEYS as they are only
 * known from the sets, but they share their hash tag, so Cluster serves them from the same slot.
 * ARGV[3] limit, ARGV[4] an owner whose runs count as free ('' for none), ARGV[5] the claimer's clock (ms) that
 * decides whether a wait's time came ('' for the server's), ARGV[6] the takeover grace in ms ('' to take no run
 * by its holder's liveness), ARGV[7] the claimer's own instance ('' for none), ARGV[8..] the definitions as
 * pairs of kind and name.
 *
 * Without an owner it reads only the entries already due (score up to now, in µs), a page at a time, until
 * `limit` pass: those of other definitions are skipped, and a record that disagrees with its score (still
 * leased) is never returned. With an owner the entries not yet due are read too, since that owner's held runs
 * count, and all of them, since they are not in creation order: the slower path a restarted worker takes,
 * O(the bucket's held runs). Then, either way, the entries of the waits set whose time came on the claimer's
 * clock, likewise: a wait whose time has not come, or that waits only for signals, is never read.
 *
 * With a grace, the instances of the `live` set whose liveness ended (one range, empty while every holder
 * renews): the runs of one gone for the grace (its range of the `held` set) count as free, as `acquire` takes
 * them; it leaves the set once it holds nothing there, and entries its runs no longer back are dropped, the
 * script's only writes. For one gone for less, the script answers how long until the grace ends.
 * Returns {entries, wake}: entries a flat list of id, sort key (the score, oldest first; with an owner, for a
 * waiting run due by its time, and for a gone holder's run, the creation order, so they come in the order
 * they were created); wake the ms until a gone holder's grace ends, or false.
 */
export const claimableRuns = lua(
  'claimable',
  `${prelude}
local t = redis.call('TIME')
local now_us = t[1] .. string.format('%06d', tonumber(t[2]))
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, reclaim = tonumber(ARGV[3]), ARGV[4]
local wake_now = now
if ARGV[5] ~= '' then wake_now = tonumber(ARGV[5]) end
local wanted = {}
for i = 8, #ARGV, 2 do wanted[#ARGV[i] .. ':' .. ARGV[i] .. ARGV[i + 1]] = true end
local found, seen = {}, {}
-- Adds the run when it is of a wanted definition, a root run, due, and free (or the reclaimer's, or held by
-- gone, an instance gone for the grace); a waiting run is due once a cancel was asked, a signal it waits for
-- came, or its time came.
local function consider(id, score, by_time, gone)
  if seen[id] then return false end
  local h = redis.call('HMGET', ARGV[1] .. id, 'kind', 'name', 'status', 'rootId', 'owner', 'leaseUntil',
    'order', 'cancel', 'wake', 'waitUntil', 'holder')
  if not (h[1] and wanted[#h[1] .. ':' .. h[1] .. h[2]]) or h[4] then return false end
  local due = claimable[h[3]]
  if h[3] == 'waiting' then
    due = h[8] == '1' or h[9] == '1' or (h[10] ~= false and tonumber(h[10]) <= wake_now)
  end
  if not due then return false end
  local free = redis.call('EXISTS', ARGV[2] .. id) == 0
    and not (h[5] and h[6] and tonumber(h[6]) > now)
  local taken = gone ~= nil and h[5] and h[11] == gone
  if not (free or taken or (reclaim ~= '' and h[5] == reclaim)) then return false end
  seen[id] = true
  found[#found + 1] = id
  found[#found + 1] = (reclaim == '' and not by_time and not taken) and score or h[7]
  return true
end
-- Reads one set's entries up to upto, a page at a time, until limit of them pass (all of them to reclaim).
local function scan(key, upto, by_time)
  local page, offset, passed = math.max(limit, 32), 0, 0
  while true do
    local ids = redis.call('ZRANGEBYSCORE', key, '-inf', upto, 'WITHSCORES', 'LIMIT', offset, page)
    for i = 1, #ids, 2 do
      if consider(ids[i], ids[i + 1], by_time) then passed = passed + 1 end
      if reclaim == '' and passed >= 2 * limit then return end
    end
    if #ids < 2 * page then return end
    offset = offset + page
  end
end
-- The runs of an instance gone for the grace; entries whose run no longer names it as a holder are dropped.
local function take_from(instance)
  local entries = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. instance .. '\\0', '(' .. instance .. '\\1')
  local passed, backed = 0, 0
  for _, entry in ipairs(entries) do
    local id = string.sub(entry, #instance + 2)
    local h = redis.call('HMGET', ARGV[1] .. id, 'holder', 'owner')
    if h[1] ~= instance or not h[2] then
      redis.call('ZREM', KEYS[4], entry)
    else
      backed = backed + 1
      if passed < 2 * limit and consider(id, nil, false, instance) then passed = passed + 1 end
    end
  end
  if backed == 0 then redis.call('ZREM', KEYS[3], instance) end
end
local upto = now_us
if reclaim ~= '' then upto = '+inf' end
scan(KEYS[1], upto, false)
scan(KEYS[2], num(wake_now), true)
local wake = false
if ARGV[6] ~= '' then
  local grace = tonumber(ARGV[6])
  local ended = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'WITHSCORES')
  for i = 1, #ended, 2 do
    local instance, left = ended[i], tonumber(ended[i + 1]) + grace - now
    if instance == ARGV[7] then
      -- This claimer's own liveness: its renewals are late, it is not gone.
    elseif left <= 0 then
      take_from(instance)
    elseif wake == false or left < wake then
      wake = left
    end
  end
end
return {found, wake}
`,
);
