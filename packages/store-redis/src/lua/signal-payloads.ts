import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Reads every signal payload a run's mailbox keeps, at one instant: the JSON of its `sig:` entries (the signals no
 * checkpoint consumed; a consumed one's entry is gone) and of its `dec:` entries (the standing decisions, kept for
 * repeats after their signal was consumed). Returns {signals JSON, decisions JSON}, both empty for an unknown run.
 */
export const readSignalPayloads = lua(
  'signal-payloads',
  `${prelude}
local signals, decisions = {}, {}
if redis.call('EXISTS', KEYS[1]) == 0 then return {signals, decisions} end
local mailbox = redis.call('HGETALL', KEYS[7])
for i = 1, #mailbox, 2 do
  local kind = string.sub(mailbox[i], 1, 4)
  if kind == 'sig:' then
    signals[#signals + 1] = mailbox[i + 1]
  elseif kind == 'dec:' then
    decisions[#decisions + 1] = mailbox[i + 1]
  end
end
return {signals, decisions}
`,
);
