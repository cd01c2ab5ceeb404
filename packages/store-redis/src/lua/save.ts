import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * A fenced checkpoint: replaces status, signature, snapshot, output and error, records the journal seq it
 * accounts for and drops the journal entries up to it (later ones, written while it was on its way, stay).
 * A checkpoint older than the stored one is a statement that arrived late: refused. Writing the final status
 * the run already has again is a retry: it changes nothing.
 * ARGV[7..]: status, signature, snapshot JSON, output JSON or '', error JSON or '', journal seq.
 * Returns a refusal ({'missing'|'recreated'|'stale'|'root'|'late'|'older'} or {'ended', status}) or
 * {'ok'}. Every path reindexes the run from what is stored, so a retry leaves its indexes exact.
 */
export const saveCheckpoint = lua(
  'save',
  `${prelude}
local refused = fence(ARGV[7])
if refused then
  reindex()
  return refused
end
local h = redis.call('HMGET', KEYS[1], 'status', 'checkpointSeq')
if terminal[h[1]] then
  reindex()
  return {'ok'}
end
local seq = ARGV[12]
if h[2] and tonumber(seq) < tonumber(h[2]) then
  reindex()
  return {'older'}
end
redis.call('HSET', KEYS[1], 'status', ARGV[7], 'signature', ARGV[8], 'snapshot', ARGV[9],
  'checkpointSeq', seq, 'updatedAt', num(now_ms()))
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'output', ARGV[10]) else redis.call('HDEL', KEYS[1], 'output') end
if ARGV[11] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[11]) else redis.call('HDEL', KEYS[1], 'error') end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', seq)
settle(ARGV[7])
reindex()
return {'ok'}
`,
);
