import { lua } from '../client.js';
import { prelude, streamKey } from './prelude.js';

/**
 * Registers a run unless its hash exists; a child left there by an earlier incarnation of the same parent id
 * is replaced (its keys wiped, its own children handed back for the store to delete). For a child on a single
 * node, KEYS[5] and KEYS[6] are the parent's hash and children set: the parent is checked at its incarnation
 * and the child added to its set in this script. On Cluster the store did both beforehand (`link-child`) and
 * passes the root it found.
 * ARGV: runId, kind, name, signature, snapshot JSON, status, pub/sub channel, the new incarnation, parent id or
 * '', parent incarnation or '', root id, root incarnation (Cluster), then for a run created `waiting` its wait:
 * JSON, until or '', signal names joined by NUL (else three '').
 * Returns {'missing'} (no such parent), {'exists', HGETALL} or {'created', HGETALL, replaced incarnation or '',
 * the replaced run's child ids}.
 */
export const createRun = lua(
  'create',
  `${prelude}
local id, parent_id, parent_inc = ARGV[1], ARGV[9], ARGV[10]
local old = redis.call('HMGET', KEYS[1], 'parentId', 'parentInc', 'incarnation', 'status')
local stale_child = parent_id ~= '' and old[1] == parent_id and old[2] ~= parent_inc
if old[3] and not stale_child then
  reindex()
  return {'exists', redis.call('HGETALL', KEYS[1])}
end
local root_id, root_inc = ARGV[11], ARGV[12]
if parent_id ~= '' and linked then
  local parent = redis.call('HMGET', KEYS[5], 'incarnation', 'rootId', 'rootInc')
  if parent[1] ~= parent_inc then return {'missing'} end
  root_id, root_inc = parent[2] or parent_id, parent[3] or parent_inc
  redis.call('SADD', KEYS[6], id)
end
local replaced = {}
if old[3] then
  replaced = redis.call('SMEMBERS', KEYS[4])
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[7], KEYS[${streamKey}])
local now = num(now_ms())
local order = order_us()
redis.call('HSET', KEYS[1], 'runId', id, 'incarnation', ARGV[8], 'kind', ARGV[2], 'name', ARGV[3],
  'signature', ARGV[4], 'snapshot', ARGV[5], 'status', ARGV[6], 'epoch', '0', 'recoveries', '0',
  'cancel', '0', 'createdAt', now, 'updatedAt', now, 'order', order)
if ARGV[13] ~= '' then redis.call('HSET', KEYS[1], 'wait', ARGV[13]) end
if ARGV[14] ~= '' then redis.call('HSET', KEYS[1], 'waitUntil', ARGV[14]) end
if ARGV[15] ~= '' then redis.call('HSET', KEYS[1], 'waitSignals', ARGV[15]) end
if parent_id ~= '' then
  redis.call('HSET', KEYS[1], 'parentId', parent_id, 'parentInc', parent_inc, 'rootId', root_id,
    'rootInc', root_inc)
else
  -- Only a run a worker can claim is announced: a child waits for its root's holder to adopt it.
  redis.call('PUBLISH', ARGV[7], id)
end
reindex()
return {'created', redis.call('HGETALL', KEYS[1]), old[3] or '', replaced}
`,
);
