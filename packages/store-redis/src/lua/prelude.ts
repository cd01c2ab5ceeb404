import { terminalStatuses } from '@cairn/sdk';
import { allStatuses } from '../keys.js';

/**
 * Lua shared by every script. Key layout: KEYS[1] the run hash, KEYS[2] its journal list, KEYS[3] its lease
 * key, then on a single node the status indexes in the order of `allStatuses` (on Cluster they live in
 * other slots and the store updates them in a second step). Numbers are formatted with `num`, since Lua's
 * default formatting loses digits past 14.
 *
 * Fenced writes take ARGV[1] epoch, ARGV[2] the holder's token or '', ARGV[3] the holder's deadline (its
 * lease's end, ms on the server's clock) or '', ARGV[4] the settled-run TTL in ms or ''.
 */
export const prelude = `
local function num(x) return string.format('%.0f', x) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function order_us()
  local t = redis.call('TIME')
  return t[1] .. string.format('%06d', tonumber(t[2]))
end
local index_of = { ${allStatuses.map((s, i) => `${s} = ${i + 4}`).join(', ')} }
local terminal = { ${terminalStatuses.map((s) => `${s} = true`).join(', ')} }
local function reindex(id, old, new, order)
  if #KEYS < 4 or old == new then return end
  if old then redis.call('ZREM', KEYS[index_of[old]], id) end
  if new then redis.call('ZADD', KEYS[index_of[new]], order, id) end
end
local function token_owner(token)
  local _, _, owner = string.match(token, '^(%d+):(%w+):(.*)$')
  return owner
end
local function fence()
  if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
  local h = redis.call('HMGET', KEYS[1], 'epoch', 'token')
  if h[1] ~= ARGV[1] then return 'stale' end
  if ARGV[2] ~= '' and h[2] ~= ARGV[2] then return 'stale' end
  if ARGV[3] ~= '' and now_ms() >= tonumber(ARGV[3]) then return 'late' end
  return nil
end
local function settle(status)
  if ARGV[4] == '' then return end
  if terminal[status] then
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
  else
    redis.call('PERSIST', KEYS[1])
    redis.call('PERSIST', KEYS[2])
  end
end
`;
