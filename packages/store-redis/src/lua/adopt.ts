import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Claims a child run for the holder of its parent's lease: raises the child's epoch to the parent's when it is
 * not higher and records a token for the child's writes. On a single node KEYS[5] and KEYS[6] are the root's
 * and the parent's hashes, and the parent's lease is current when the root still has its incarnation, the
 * epoch and the owner named and the parent the epoch; on Cluster the store read them beforehand and passes
 * the outcome. Refused when the adoption reached the server after the parent lease's end.
 * ARGV: parent id, parent incarnation, epoch, owner, token, deadline ms, root incarnation, current ('1' or
 * '0', Cluster).
 * Returns {'missing'}, {'stranger'} (not this parent's child), {'stale'}, {'newer'}, {'late'} or
 * {'ok', incarnation}.
 */
export const adoptRun = lua(
  'adopt',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local h = redis.call('HMGET', KEYS[1], 'parentId', 'parentInc', 'epoch', 'incarnation')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return {'stranger'} end
local epoch = ARGV[3]
if linked then
  local root = redis.call('HMGET', KEYS[5], 'incarnation', 'epoch', 'owner')
  local parent = redis.call('HMGET', KEYS[6], 'incarnation', 'epoch')
  if root[1] ~= ARGV[7] or root[2] ~= epoch or root[3] ~= ARGV[4] or parent[1] ~= ARGV[2]
    or parent[2] ~= epoch then
    return {'stale'}
  end
elseif ARGV[8] ~= '1' then
  return {'stale'}
end
if tonumber(h[3]) > tonumber(epoch) then return {'newer'} end
local now = now_ms()
if now >= tonumber(ARGV[6]) then return {'late'} end
redis.call('HSET', KEYS[1], 'epoch', epoch, 'token', ARGV[5], 'updatedAt', num(now))
reindex()
return {'ok', h[4]}
`,
);
