import { lua } from '../client.js';

/**
 * A subject's key, made on first use: nil once the subject was forgotten. One script, so it is atomic with
 * `keyring-forget`: a key asked for while its subject is forgotten is answered before the forget or refused.
 * KEYS: ids (subject hash -> key id), keys (key id -> base64 key), forgotten (subject hashes).
 * ARGV: the subject's hash, an id and a key for it if it has none yet. Returns {id, key} or nil.
 */
export const keyringCurrent = lua(
  'keyring-current',
  `if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return false end
local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then
  id = ARGV[2]
  redis.call('HSET', KEYS[1], ARGV[1], id)
  redis.call('HSET', KEYS[2], id, ARGV[3])
  return {id, ARGV[3]}
end
return {id, redis.call('HGET', KEYS[2], id)}
`,
);
