import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * A fenced checkpoint: replaces status, signature, snapshot, output and error, records the journal seq it
 * accounts for and drops the journal entries up to it (later ones, written while it was on its way, stay).
 * A checkpoint older than the stored one is a statement that arrived late: refused. Writing the final status
 * the run already has again is a retry: it changes nothing.
 *
 * In the same write: the run's count of stalled attempts ends (`stalls`, absent for 0); the mailbox's consumed
 * cursor rises to the seq given (the signals up to it leave the
 * mailbox, so a signal is consumed exactly when the state that acted on it is stored); a `waiting` status
 * stores its wait, and marks the run awake (`wake`) when a signal it waits for is already in the mailbox (one
 * that arrived before the run began to wait); any other status clears the wait. With `release` (a root run's
 * holder giving it up with this write) the lease is cleared as `release` would, and workers are told on the
 * channel unless the run ended, so a wait's new time or an awake run is seen at once.
 *
 * With `unlessMail`, checked after the fence and the retry: while the mailbox holds a signal above the consumed
 * cursor (the stored one or the seq given, whichever is higher) nothing is written, not even the release, and
 * the script answers {'mail'}.
 *
 * ARGV[7..]: status, signature, snapshot JSON, output JSON or '', error JSON or '', journal seq, wait JSON or
 * '', wait until or '', wait signal names joined by NUL or '', signals consumed or '', release ('1' or ''),
 * channel, unless mail ('1' or '').
 * Returns a refusal ({'missing'|'recreated'|'stale'|'root'|'late'|'older'} or {'ended', status}), {'mail'} for
 * a checkpoint `unlessMail` kept out, or {'ok', mail}: mail is 1 when the mailbox holds a signal above the
 * consumed cursor after the write (0 for a retry, which writes nothing). Every path reindexes the run from what
 * is stored, so a retry leaves its indexes exact.
 */
export const saveCheckpoint = lua(
  'save',
  `${prelude}
local refused = fence(ARGV[7])
if refused then
  reindex()
  return refused
end
local h = redis.call('HMGET', KEYS[1], 'status', 'checkpointSeq')
if terminal[h[1]] then
  reindex()
  return {'ok', 0}
end
local function mail_above(cursor)
  local last, consumed = mailbox_bounds()
  return last > math.max(consumed, cursor)
end
if ARGV[19] == '1' and mail_above(tonumber(ARGV[16]) or 0) then
  reindex()
  return {'mail'}
end
local seq = ARGV[12]
if h[2] and tonumber(seq) < tonumber(h[2]) then
  reindex()
  return {'older'}
end
local status = ARGV[7]
redis.call('HSET', KEYS[1], 'status', status, 'signature', ARGV[8], 'snapshot', ARGV[9],
  'checkpointSeq', seq, 'updatedAt', num(now_ms()))
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'output', ARGV[10]) else redis.call('HDEL', KEYS[1], 'output') end
if ARGV[11] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[11]) else redis.call('HDEL', KEYS[1], 'error') end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', seq)
redis.call('HDEL', KEYS[1], 'stalls')
if ARGV[16] ~= '' then consume_signals(ARGV[16]) end
clear_wait()
if status == 'waiting' then
  redis.call('HSET', KEYS[1], 'wait', ARGV[13])
  if ARGV[14] ~= '' then redis.call('HSET', KEYS[1], 'waitUntil', ARGV[14]) end
  if ARGV[15] ~= '' then
    redis.call('HSET', KEYS[1], 'waitSignals', ARGV[15])
    if mailbox_wakes(wait_names(ARGV[15])) then redis.call('HSET', KEYS[1], 'wake', '1') end
  end
end
local released = ARGV[17] == '1' and ARGV[6] == ''
if released then
  redis.call('HDEL', KEYS[1], 'owner', 'leaseUntil', 'token')
  -- The fence passed, so a lease key of this epoch is this holder's.
  local current = redis.call('GET', KEYS[3])
  if current and string.match(current, '^(%d+):') == ARGV[1] then redis.call('DEL', KEYS[3]) end
end
settle(status)
reindex()
if released and not terminal[status] then
  redis.call('PUBLISH', ARGV[18], redis.call('HGET', KEYS[1], 'runId'))
end
if mail_above(0) then return {'ok', 1} end
return {'ok', 0}
`,
);
