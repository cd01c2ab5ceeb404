import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * A fenced status change that keeps the snapshot and the journal. Writing the final status the run already
 * has again is a retry: it changes nothing. Any status but `waiting` clears the wait; `waiting` keeps a run
 * stored waiting as it is (wait and `wake` included) and is refused for any other with {'not-waiting', status}.
 * ARGV[7..]: status, error JSON or '', stalls or '' (unchanged).
 * Returns a refusal (see `fence`), {'not-waiting', status} or {'ok'}. Every path reindexes the run from what is
 * stored, so a retry leaves its indexes exact.
 */
export const updateRunStatus = lua(
  'update-status',
  `${prelude}
local refused = fence(ARGV[7])
if refused then
  reindex()
  return refused
end
local stored = redis.call('HGET', KEYS[1], 'status')
if terminal[stored] then
  reindex()
  return {'ok'}
end
if ARGV[7] == 'waiting' and stored ~= 'waiting' then
  reindex()
  return {'not-waiting', stored}
end
redis.call('HSET', KEYS[1], 'status', ARGV[7], 'updatedAt', num(now_ms()))
if ARGV[7] ~= 'waiting' then clear_wait() end
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'stalls', ARGV[9]) end
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[8]) else redis.call('HDEL', KEYS[1], 'error') end
settle(ARGV[7])
reindex()
return {'ok'}
`,
);
