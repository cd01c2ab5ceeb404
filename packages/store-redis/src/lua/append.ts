import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Fenced journal append: ARGV[5..] are pairs of seq and entry JSON, in order. An entry whose seq is not above
 * the highest seq ever appended (the hash's `seq`, kept across checkpoints) is skipped.
 * Returns {'missing'|'stale'|'late'} or {'ok', status, order}.
 */
export const appendJournal = lua(
  'append',
  `${prelude}
local refused = fence()
if refused then return {refused} end
local h = redis.call('HMGET', KEYS[1], 'seq', 'status', 'order')
local highest = tonumber(h[1])
for i = 5, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if highest == nil or seq > highest then
    redis.call('RPUSH', KEYS[2], ARGV[i + 1])
    highest = seq
  end
end
if highest ~= nil then redis.call('HSET', KEYS[1], 'seq', num(highest)) end
redis.call('HSET', KEYS[1], 'updatedAt', num(now_ms()))
settle(h[2])
return {'ok', h[2], h[3]}
`,
);
