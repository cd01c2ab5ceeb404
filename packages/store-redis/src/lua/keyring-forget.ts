import { lua } from '../client.js';

/**
 * Forgets a subject: its key deleted, its hash kept so no key is made for it again (`keyring-current`).
 * KEYS as `keyring-current`'s. ARGV: the subject's hash.
 */
export const keyringForget = lua(
  'keyring-forget',
  `redis.call('SADD', KEYS[3], ARGV[1])
local id = redis.call('HGET', KEYS[1], ARGV[1])
if id then
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
`,
);
