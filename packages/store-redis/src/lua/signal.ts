import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Puts a signal in a run's mailbox, whoever holds the run (not fenced). Checks and append are one script, so of
 * two signals with one idempotency key exactly one is accepted, and seqs follow acceptance order. The signal's
 * JSON gets its seq and the server's time spliced in front of the fields the store sent, so the script never
 * decodes a payload. A waiting run that waits for this name is marked awake, put in the claimable set
 * (reindex) and announced on the channel.
 * ARGV: the signal's JSON ({name, payload, idempotencyKey}), its name, its idempotency key or '', channel.
 * Returns {'missing'}, {'child', root id}, {'ended', status}, {'duplicate', first seq} or {'ok', seq}.
 */
export const signalRun = lua(
  'signal',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'rootId', 'waitSignals')
if h[3] then return {'child', h[3]} end
if terminal[h[2]] then return {'ended', h[2]} end
local name, key = ARGV[2], ARGV[3]
if key ~= '' then
  local first = redis.call('HGET', KEYS[7], 'key:' .. key)
  if first then return {'duplicate', first} end
end
local last = mailbox_bounds()
local seq = num(last + 1)
local at = num(now_ms())
redis.call('HSET', KEYS[7], 'sig:' .. seq, '{"seq":' .. seq .. ',"at":' .. at .. ',' .. string.sub(ARGV[1], 2),
  'name:' .. seq, name)
if key ~= '' then redis.call('HSET', KEYS[7], 'key:' .. key, seq) end
redis.call('HSET', KEYS[1], 'signalSeq', seq, 'updatedAt', at)
local wakes = h[2] == 'waiting' and wait_names(h[4])[name]
if wakes then redis.call('HSET', KEYS[1], 'wake', '1') end
reindex()
if wakes then redis.call('PUBLISH', ARGV[4], h[1]) end
return {'ok', seq}
`,
);
