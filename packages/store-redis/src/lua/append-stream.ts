import { lua } from '../client.js';
import { prelude, streamKey } from './prelude.js';

/**
 * Fenced stream append: ARGV[7..] are quadruples of position, unit, part JSON and time, in order, each added
 * to the run's stream as the entry `<position>-0` (fields `unit`, `part`, `at`). Fenced as the journal append
 * is (`fence`: incarnation, epoch, token, deadline, a child's root, a run that ended), before anything is
 * read, so a holder fenced out adds nothing whatever positions it names. Chunks at or below the highest
 * position stored are skipped (a retried append); the first one kept must be the next position and each the
 * next after it, checked before the first `XADD`, so a gap writes nothing. Touches neither the run hash nor
 * its indexes. Returns a refusal (see `fence`), {'gap', highest, position} or {'ok'}.
 */
export const appendStreamChunks = lua(
  'append-stream',
  `${prelude}
local refused = fence(nil)
if refused then return refused end
local last = redis.call('XREVRANGE', KEYS[${streamKey}], '+', '-', 'COUNT', 1)[1]
-- Every stream id is <ms>-<seq>; the store writes <position>-0.
local highest = last and tonumber(string.match(last[1], '^(%d+)')) or 0
local expected = highest + 1
for i = 7, #ARGV, 4 do
  local position = tonumber(ARGV[i])
  if position > highest then
    if position ~= expected then return {'gap', num(highest), ARGV[i]} end
    expected = expected + 1
  end
end
for i = 7, #ARGV, 4 do
  if tonumber(ARGV[i]) > highest then
    redis.call('XADD', KEYS[${streamKey}], ARGV[i] .. '-0', 'unit', ARGV[i + 1], 'part', ARGV[i + 2],
      'at', ARGV[i + 3])
  end
end
return {'ok'}
`,
);
