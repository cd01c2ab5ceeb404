import { lua } from '../client.js';

/**
 * On Cluster, before a child run is created in its own slot: adds it to the set of the parent's children while
 * the parent exists at the incarnation named, so deleting the parent finds it. A crash before the child is
 * created leaves only an id that names no run, which deleting the parent skips. KEYS: the parent's layout.
 * ARGV: parent incarnation, child run id. Returns {'missing'} or {'ok', root id, root incarnation}.
 */
export const linkChild = lua(
  'link-child',
  `
local parent = redis.call('HMGET', KEYS[1], 'runId', 'incarnation', 'rootId', 'rootInc')
if parent[2] ~= ARGV[1] then return {'missing'} end
redis.call('SADD', KEYS[4], ARGV[2])
return {'ok', parent[3] or parent[1], parent[4] or parent[2]}
`,
);
