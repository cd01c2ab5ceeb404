import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Fenced journal append: ARGV[7..] are pairs of seq and entry JSON, in order, added to the journal's sorted set
 * scored by seq. An entry whose seq is not above the highest seq ever appended (the hash's `seq`, kept across
 * checkpoints) is skipped, so a retried append never duplicates an entry. An append with an entry at or below
 * the stored checkpoint's seq is refused whole ({'older'}): made from an older checkpoint (or one that lied),
 * its marks must not be reported written. Returns a refusal (see `fence`) or {'ok'}.
 */
export const appendJournal = lua(
  'append',
  `${prelude}
local refused = fence(nil)
if refused then return refused end
local h = redis.call('HMGET', KEYS[1], 'seq', 'checkpointSeq')
local highest = tonumber(h[1])
local checkpoint = tonumber(h[2])
if checkpoint then
  for i = 7, #ARGV, 2 do
    if tonumber(ARGV[i]) <= checkpoint then return {'older'} end
  end
end
local floor = highest or -math.huge
for i = 7, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq > floor then
    redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i + 1])
    floor = seq
    highest = seq
  end
end
if highest ~= nil then redis.call('HSET', KEYS[1], 'seq', num(highest)) end
redis.call('HSET', KEYS[1], 'updatedAt', num(now_ms()))
return {'ok'}
`,
);
