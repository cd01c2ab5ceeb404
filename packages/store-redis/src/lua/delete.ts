import { lua } from '../client.js';
import { prelude, streamKey } from './prelude.js';

/**
 * Deletes a run's keys (its mailbox and stream too) and its entries in its bucket's indexes (its holder's
 * `held` set too), and hands back its child run ids for the store to delete next (they live in other slots).
 * ARGV[1] is the mode:
 * - `delete` (ARGV[2] the root id the store expects, or ''): refused while a live lease holds the run, decided
 *   on the server's clock: its own lease, or for a child its root's, read from KEYS[5] (the root's hash) on a
 *   single node, where KEYS[6] is the parent's children set the child leaves.
 * - `prune` (ARGV[2] as for delete, ARGV[3] a time in ms, ARGV[4] the run id, ARGV[5..] statuses): also only a
 *   run in one of the statuses and last updated before that time, and never a child run (it goes with its
 *   root); the index entries of a run whose keys are gone (expired) are dropped.
 * - `cascade` (ARGV[2] parent id, ARGV[3] parent incarnation): a child of a parent just deleted, only while it
 *   is still that parent incarnation's child (the id may have been created again since).
 * Returns {'missing'}, {'kept'}, {'held'}, {'moved', root id, root incarnation, parent id} (the run's root is
 * not the one expected: call again with its keys) or {'deleted', old status, incarnation, child ids}.
 */
export const deleteRun = lua(
  'delete',
  `${prelude}
local mode = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 0 then
  if mode == 'prune' then
    unindex(ARGV[4])
  end
  return {'missing'}
end
local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'updatedAt', 'owner', 'leaseUntil', 'incarnation',
  'parentId', 'parentInc', 'rootId', 'rootInc', 'holder')
if mode == 'cascade' then
  if h[7] ~= ARGV[2] or h[8] ~= ARGV[3] then return {'kept'} end
elseif mode == 'prune' and h[7] then
  -- A child goes with its root, never on its own: a root that resumes may still need it.
  return {'kept'}
else
  if (h[9] or '') ~= ARGV[2] then return {'moved', h[9] or '', h[10] or '', h[7] or ''} end
  if mode == 'prune' then
    local wanted = false
    for i = 5, #ARGV do if ARGV[i] == h[2] then wanted = true end end
    if not wanted or tonumber(h[3]) >= tonumber(ARGV[3]) then return {'kept'} end
  end
  local now = now_ms()
  local held = redis.call('EXISTS', KEYS[3]) == 1 or (h[4] and h[5] and tonumber(h[5]) > now)
  if h[9] and linked then
    local root = redis.call('HMGET', KEYS[5], 'incarnation', 'owner', 'leaseUntil')
    if root[1] == h[10] and root[2] and root[3] and tonumber(root[3]) > now then held = true end
  end
  if held then
    if mode == 'prune' then return {'kept'} end
    return {'held'}
  end
end
local children = redis.call('SMEMBERS', KEYS[4])
if h[11] then unhold(h[11], h[1]) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[7], KEYS[${streamKey}])
if h[7] and linked then redis.call('SREM', KEYS[6], h[1]) end
unindex(h[1])
return {'deleted', h[2], h[6], children}
`,
);
