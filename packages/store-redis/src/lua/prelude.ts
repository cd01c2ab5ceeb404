import { claimableStatuses, terminalStatuses } from '@cairn/sdk';
import { allStatuses } from '../keys.js';

/** Where the run's mailbox is in a script's KEYS. */
const mailboxKey = 7;
/**
 * Where the run's bucket's indexes start in a script's KEYS: the status indexes, then the claimable set, then
 * the waits set.
 */
const firstIndexKey = 8;
const claimableKey = firstIndexKey + allStatuses.length;
const waitsKey = claimableKey + 1;
/** Where the bucket's liveness keys are in a script's KEYS: its `live` set, then its `held` set (see `KeySpace`). */
export const liveKey = waitsKey + 1;
export const heldKey = liveKey + 1;
/** Where the run's stream is in a script's KEYS (see `RunKeys.stream`). */
export const streamKey = heldKey + 1;

/**
 * Lua shared by every script. Key layout: KEYS[1] the run hash, KEYS[2] its journal (a sorted set of entry
 * JSON scored by seq), KEYS[3] its lease key, KEYS[4] the set of its child run ids; KEYS[5] and KEYS[6] keys
 * of related runs (its root's, its parent's: each script says which), KEYS[7] its mailbox (see `RunKeys`), then
 * the indexes of the run's bucket (same slot): its status indexes in the order of `allStatuses`, its claimable
 * set and its waits set, then the bucket's `live` and `held` sets (see `KeySpace`), then the run's stream
 * (`streamKey`). Related runs may live in other slots, so only a single node gets them: on Cluster, and for a
 * script with no related run, KEYS[5] and KEYS[6] repeat KEYS[1] and KEYS[4] (`linked` is false) and the
 * store does what needs the other runs in separate steps. Numbers are formatted with `num`, since Lua's default formatting loses digits past 14.
 *
 * `reindex()` puts the run where its stored hash says, in every index of its bucket: a retried write leaves the
 * indexes exact whatever its earlier try did or replied, so each script that writes a run calls it last (and
 * `unindex(id)` when the run is gone). A root run in a claimable status is in the claimable set, scored in
 * microseconds on the server's clock from when it can be claimed: its creation order while nobody holds it
 * (FIFO), its lease's end while someone does, so a lease that ran out is due by its score alone.
 *
 * A waiting root run is in the claimable set (scored the same way) only once it is awake: a cancel was asked
 * (`cancel`) or a signal it waits for is in its mailbox (`wake`, kept by the scripts that write a wait or a
 * signal). One that waits for a time is in the waits set too, scored by `waitUntil` (ms on the clock of the
 * runtime that wrote the wait, which the claimer passes, so it cannot share the claimable set's scores). One
 * that waits only for signals that have not come is in neither: it costs a poll nothing.
 *
 * The run hash keeps the wait as `wait` (the RunWait's JSON), `waitUntil` and `waitSignals` (its names joined by
 * NUL), and the mailbox's counters: `signalSeq` (the last seq accepted) and `signalsConsumed` (the cursor);
 * absent counters are 0.
 *
 * A lease claimed by a store instance that keeps a liveness names it in `holder`, and the run is in the
 * bucket's `held` set under that instance (`acquire` writes both), whose liveness is in the bucket's `live`
 * set: `reindex()` lets the run go from there (`unhold`) once no owner holds it, and an instance that holds
 * nothing more in the bucket leaves its `live` set.
 *
 * Fenced writes take ARGV[1] epoch, ARGV[2] the holder's token or '', ARGV[3] the holder's deadline (its
 * lease's end, ms on the server's clock) or '', ARGV[4] the settled-run TTL in ms or '', ARGV[5] the run's
 * incarnation, ARGV[6] the root's incarnation for a child's write (KEYS[5] is then the root's hash) or ''.
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
local linked = KEYS[5] ~= KEYS[1]
local index_of = { ${allStatuses.map((s, i) => `${s} = ${i + firstIndexKey}`).join(', ')} }
local terminal = { ${terminalStatuses.map((s) => `${s} = true`).join(', ')} }
local claimable = { ${claimableStatuses.map((s) => `${s} = true`).join(', ')} }
local function unindex(id)
  for i = ${firstIndexKey}, ${waitsKey} do redis.call('ZREM', KEYS[i], id) end
end
-- A run held by an instance: its entry in the held set. Instance ids hold no NUL.
local function held_entry(instance, id) return instance .. '\\0' .. id end
-- The instance no longer holds the run; with nothing more held in the bucket its liveness leaves it too.
local function unhold(instance, id)
  redis.call('ZREM', KEYS[${heldKey}], held_entry(instance, id))
  if redis.call('ZLEXCOUNT', KEYS[${heldKey}], '[' .. instance .. '\\0', '(' .. instance .. '\\1') == 0 then
    redis.call('ZREM', KEYS[${liveKey}], instance)
  end
end
local function reindex()
  local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'order', 'rootId', 'owner', 'leaseUntil',
    'cancel', 'wake', 'waitUntil', 'holder')
  local id, status, order = h[1], h[2], h[3]
  if not id then return end
  if h[10] and not h[5] then
    unhold(h[10], id)
    redis.call('HDEL', KEYS[1], 'holder')
  end
  for s, i in pairs(index_of) do
    if s == status then redis.call('ZADD', KEYS[i], order, id) else redis.call('ZREM', KEYS[i], id) end
  end
  local waiting = status == 'waiting' and not h[4]
  local awake = claimable[status] or (waiting and (h[7] == '1' or h[8] == '1'))
  if h[4] or not awake then
    redis.call('ZREM', KEYS[${claimableKey}], id)
  elseif h[5] and h[6] then
    redis.call('ZADD', KEYS[${claimableKey}], num(tonumber(h[6]) * 1000), id)
  else
    redis.call('ZADD', KEYS[${claimableKey}], order, id)
  end
  if waiting and h[9] then
    redis.call('ZADD', KEYS[${waitsKey}], h[9], id)
  else
    redis.call('ZREM', KEYS[${waitsKey}], id)
  end
end
local function clear_wait()
  redis.call('HDEL', KEYS[1], 'wait', 'waitUntil', 'waitSignals', 'wake')
end
-- The mailbox's bounds: the last seq accepted and the highest one a checkpoint consumed.
local function mailbox_bounds()
  local h = redis.call('HMGET', KEYS[1], 'signalSeq', 'signalsConsumed')
  return tonumber(h[1] or '0'), tonumber(h[2] or '0')
end
-- Raises the consumed cursor to upto (never lowers it, never past the last signal) and drops those signals;
-- their idempotency keys stay.
local function consume_signals(upto)
  local last, consumed = mailbox_bounds()
  local to = math.min(tonumber(upto), last)
  if to <= consumed then return end
  for seq = consumed + 1, to do redis.call('HDEL', KEYS[${mailboxKey}], 'sig:' .. seq, 'name:' .. seq) end
  redis.call('HSET', KEYS[1], 'signalsConsumed', num(to))
end
-- The unconsumed signals' JSON, in seq order, read a page at a time (unpack has a limit on arguments).
local function unconsumed_signals()
  local last, consumed = mailbox_bounds()
  local found = {}
  local seq = consumed + 1
  while seq <= last do
    local fields = {}
    for s = seq, math.min(last, seq + 499) do fields[#fields + 1] = 'sig:' .. s end
    for _, signal in ipairs(redis.call('HMGET', KEYS[${mailboxKey}], unpack(fields))) do
      if signal then found[#found + 1] = signal end
    end
    seq = seq + 500
  end
  return found
end
-- True when an unconsumed signal bears one of the names (a set) the run waits for.
local function mailbox_wakes(names)
  local last, consumed = mailbox_bounds()
  for seq = consumed + 1, last do
    if names[redis.call('HGET', KEYS[${mailboxKey}], 'name:' .. seq) or ''] then return true end
  end
  return false
end
-- The set of signal names a wait waits for, from waitSignals (the names joined by NUL, which no signal name
-- holds: no JSON to decode in a script).
local function wait_names(text)
  local names = {}
  if text then for name in string.gmatch(text, '[^%z]+') do names[name] = true end end
  return names
end
local function token_owner(token)
  local _, _, owner = string.match(token, '^(%d+):(%w+):(.*)$')
  return owner
end
-- Refuses a write unless the run is the incarnation and epoch named (and the holder's claim, before its
-- deadline), a child's root still is too, and the run has not ended: a final status is only written again
-- by a retry of the write that set it (allow).
local function fence(allow)
  if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
  local h = redis.call('HMGET', KEYS[1], 'incarnation', 'epoch', 'token', 'status')
  if h[1] ~= ARGV[5] then return {'recreated'} end
  if h[2] ~= ARGV[1] then return {'stale'} end
  -- The final status this write names, already stored at its epoch: a write sent again after an unknown outcome.
  -- Its first try may have released the lease (token gone) and the deadline may be past; it changes nothing.
  local retried_end = allow ~= nil and terminal[h[4]] and h[4] == allow
  if ARGV[2] ~= '' and h[3] ~= ARGV[2] and not retried_end then return {'stale'} end
  if ARGV[6] ~= '' and linked then
    local root = redis.call('HMGET', KEYS[5], 'incarnation', 'epoch')
    if root[1] ~= ARGV[6] or root[2] ~= ARGV[1] then return {'root'} end
  end
  if ARGV[3] ~= '' and now_ms() >= tonumber(ARGV[3]) and not retried_end then return {'late'} end
  if terminal[h[4]] and h[4] ~= allow then return {'ended', h[4]} end
  return nil
end
local function settle(status)
  if ARGV[4] == '' or not terminal[status] then return end
  for _, key in ipairs({KEYS[1], KEYS[2], KEYS[4], KEYS[${mailboxKey}], KEYS[${streamKey}]}) do
    redis.call('PEXPIRE', key, ARGV[4])
  end
end
`;
