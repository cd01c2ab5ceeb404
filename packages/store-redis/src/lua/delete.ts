import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Deletes a run's keys and its index entry. With ARGV (prune): ARGV[1] a time in ms, ARGV[2] the run id,
 * ARGV[3..] statuses; only a run in one of the statuses, last updated before that time and with no live lease
 * is deleted, and the index entries of a run whose keys are gone (expired) are dropped.
 * Returns {'missing'}, {'kept'} or {'deleted', old status}.
 */
export const deleteRun = lua(
  'delete',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then
  if #ARGV > 0 and #KEYS >= 4 then
    for i = 4, #KEYS do redis.call('ZREM', KEYS[i], ARGV[2]) end
  end
  return {'missing'}
end
local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'updatedAt', 'owner', 'leaseUntil')
if #ARGV > 0 then
  local wanted = false
  for i = 3, #ARGV do if ARGV[i] == h[2] then wanted = true end end
  if not wanted or tonumber(h[3]) >= tonumber(ARGV[1]) then return {'kept'} end
  if redis.call('EXISTS', KEYS[3]) == 1 then return {'kept'} end
  if h[4] and h[5] and tonumber(h[5]) > now_ms() then return {'kept'} end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
reindex(h[1], h[2], nil, nil)
return {'deleted', h[2]}
`,
);
