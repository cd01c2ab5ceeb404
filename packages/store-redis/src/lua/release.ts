import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Gives a run up when the hash still names this holder (incarnation, epoch, owner, and the token when known):
 * clears the owner and deletes the lease key if it is this holder's, and makes the run claimable again by
 * its creation order. ARGV: epoch, owner, token or '', channel,
 * incarnation. Returns {'released'} or {'noop'}.
 */
export const releaseLease = lua(
  'release',
  `${prelude}
local h = redis.call('HMGET', KEYS[1], 'epoch', 'owner', 'token', 'incarnation')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[4] ~= ARGV[5] or (ARGV[3] ~= '' and h[3] ~= ARGV[3]) then
  return {'noop'}
end
redis.call('HDEL', KEYS[1], 'owner', 'leaseUntil', 'token')
reindex()
if h[3] and redis.call('GET', KEYS[3]) == h[3] then redis.call('DEL', KEYS[3]) end
redis.call('PUBLISH', ARGV[4], h[1])
return {'released'}
`,
);
