import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Puts a decision on a held call (a `cairn.approval` signal) in a run's mailbox by the rules of the sdk's
 * `decide`, checked against the run's stored wait in the same script: a decision on a call and arguments already
 * kept is answered (whatever the status), one on a call the run does not wait for, or an approval of other
 * arguments, is refused, keeping nothing; else it is kept with the hash the call waits with, and wakes the run.
 * It is kept under the key 'cairn.approval:' .. callKey .. ':' .. argsHash (`key:` to its seq, as any key), its
 * decision under `dec:` .. key (its `sig:` entry goes once consumed, the decision stays for repeats), and the
 * call's latest key under `declast:` .. callKey, for a rejection that names no arguments once the call is no
 * longer waited on.
 * ARGV: the decision's JSON (checked: callId, approved, argsHash?, by?, reason?), the call key (hex SHA-256 of
 * the call id), channel.
 * Returns {'missing'}, {'child', root id}, {'duplicate', seq, decision JSON}, {'ended', status},
 * {'not-waiting', status}, {'other-arguments', waited hash} or {'ok', seq, decision JSON}.
 */
export const decideRun = lua(
  'decide',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local h = redis.call('HMGET', KEYS[1], 'runId', 'status', 'rootId', 'wait', 'waitSignals')
if h[3] then return {'child', h[3]} end
local decision = cjson.decode(ARGV[1])
local waited = nil
if h[2] == 'waiting' and h[4] then
  local ok, wait = pcall(cjson.decode, h[4])
  local approvals = ok and type(wait) == 'table' and type(wait.detail) == 'table' and wait.detail.approvals
  if type(approvals) == 'table' then
    for _, call in ipairs(approvals) do
      if type(call) == 'table' and call.callId == decision.callId and type(call.argsHash) == 'string' then
        waited = call.argsHash
        break
      end
    end
  end
end
local hash = decision.argsHash
if type(hash) ~= 'string' then hash = waited end
local key
if hash then
  key = 'cairn.approval:' .. ARGV[2] .. ':' .. hash
else
  key = redis.call('HGET', KEYS[7], 'declast:' .. ARGV[2])
end
if key then
  local first = redis.call('HGET', KEYS[7], 'key:' .. key)
  if first then return {'duplicate', first, redis.call('HGET', KEYS[7], 'dec:' .. key)} end
end
if terminal[h[2]] then return {'ended', h[2]} end
if not waited then return {'not-waiting', h[2]} end
if hash ~= waited then return {'other-arguments', waited} end
decision.argsHash = waited
local kept = cjson.encode(decision)
local last = mailbox_bounds()
local seq = num(last + 1)
local at = num(now_ms())
redis.call('HSET', KEYS[7],
  'sig:' .. seq, '{"seq":' .. seq .. ',"at":' .. at .. ',"name":"cairn.approval","payload":' .. kept ..
    ',"idempotencyKey":' .. cjson.encode(key) .. '}',
  'name:' .. seq, 'cairn.approval',
  'key:' .. key, seq,
  'dec:' .. key, kept,
  'declast:' .. ARGV[2], key)
redis.call('HSET', KEYS[1], 'signalSeq', seq, 'updatedAt', at)
local wakes = h[2] == 'waiting' and wait_names(h[5])['cairn.approval']
if wakes then redis.call('HSET', KEYS[1], 'wake', '1') end
reindex()
if wakes then redis.call('PUBLISH', ARGV[3], h[1]) end
return {'ok', seq, kept}
`,
);
