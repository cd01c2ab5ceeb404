import { lua } from '../client.js';

/**
 * Reads one run stored in the key layout before buckets, at one instant. KEYS: its hash, journal, lease key and
 * children set there (one hash tag: the escaped run id).
 * Returns {'missing'} or {'ok', HGETALL, the hash's PTTL, journal as [member, score, ...], lease token or '',
 * the lease's PTTL, child run ids}.
 */
export const readLegacyRun = lua(
  'read-legacy-run',
  `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
return {'ok', redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1]),
  redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES'), redis.call('GET', KEYS[3]) or '',
  redis.call('PTTL', KEYS[3]), redis.call('SMEMBERS', KEYS[4])}
`,
);
