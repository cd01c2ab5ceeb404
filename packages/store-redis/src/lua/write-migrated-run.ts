import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Writes a run read from the layout before buckets into its keys of the bucketed layout and its bucket's
 * indexes, unless its hash is there already (an earlier pass of the migration wrote it and stopped before it
 * removed the old keys): then it only reindexes it. KEYS as the prelude says.
 * ARGV: the hash's PTTL (ms, or negative for none), the lease token or '', the lease's PTTL, the number of hash
 * fields n, then n field/value pairs, the number of journal entries m, m member/score pairs, then child ids.
 * Returns {'present'} or {'written'}.
 */
export const writeMigratedRun = lua(
  'write-migrated-run',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 1 then
  reindex()
  return {'present'}
end
local ttl, token, lease_ttl = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local i = 5
for _ = 1, tonumber(ARGV[4]) do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 2
end
local entries = tonumber(ARGV[i])
i = i + 1
for _ = 1, entries do
  redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i])
  i = i + 2
end
for j = i, #ARGV do redis.call('SADD', KEYS[4], ARGV[j]) end
if token ~= '' and lease_ttl > 0 then redis.call('SET', KEYS[3], token, 'PX', lease_ttl) end
if ttl > 0 then
  for _, key in ipairs({KEYS[1], KEYS[2], KEYS[4]}) do redis.call('PEXPIRE', key, ttl) end
end
reindex()
return {'written'}
`,
);
