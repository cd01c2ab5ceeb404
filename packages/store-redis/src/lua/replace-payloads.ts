import { lua } from '../client.js';
import { prelude, streamKey } from './prelude.js';

/**
 * Replaces payload strings wherever a run keeps them, at its incarnation, in one step: the run hash's `snapshot`,
 * `output`, `error` and `wait`, the journal's entries (a sorted set member cannot change: the new one is added
 * under the same seq, then the old one removed, so the set never empties and keeps its TTL), the mailbox's
 * `sig:` and `dec:` entries, and the stream's `part` fields (an entry cannot change either: a stream with a part
 * to change is rebuilt, every id and field as it was, and keeps its TTL). Not fenced: the new strings say what
 * the old ones said, and as one script it lands wholly before or after any holder's write, so it never undoes
 * one. It touches no field an index reads, so it does not reindex.
 *
 * The rule is the sdk's `replaceInJsonText`: `"<from>"` becomes `"<to>"` in the JSON text, exact because
 * `checkReplacements` admits only printable ASCII without `"` or `\`, starting with a letter or digit (such a quote
 * opens a string). Here it is narrowed to what the memory store replaces, string values: a match whose quote follows
 * a backslash is an escaped quote inside another string, and one followed by a colon is an object's key; both are
 * left alone. And Lua's cjson (`decide`) writes `/` as `\/`, so a string holding `/` is also looked for in that
 * form. Replacements apply one after another, as in `replaceInJsonText`.
 *
 * ARGV: the incarnation, then pairs of the string replaced and the one replacing it. Returns how many of the
 * replaced strings were found (at least once); 0 for an unknown run or another incarnation.
 */
export const replacePayloads = lua(
  'replace-payloads',
  `${prelude}
if redis.call('HGET', KEYS[1], 'incarnation') ~= ARGV[1] then return 0 end
local backslash = string.char(92)
local needles = {}
for i = 2, #ARGV, 2 do
  local from = ARGV[i]
  local forms = {'"' .. from .. '"'}
  local escaped = string.gsub(from, '/', backslash .. '/')
  if escaped ~= from then forms[2] = '"' .. escaped .. '"' end
  needles[#needles + 1] = {from = from, forms = forms, to = '"' .. ARGV[i + 1] .. '"'}
end
local found, count = {}, 0
-- The first byte from at on that is not JSON whitespace.
local function next_byte(text, at)
  local byte = string.byte(text, at)
  while byte == 32 or byte == 9 or byte == 10 or byte == 13 do
    at = at + 1
    byte = string.byte(text, at)
  end
  return byte
end
-- text with every match of needle (plain, no patterns) that is a string value replaced by to; true when one was.
-- A match after a backslash (92) is an escaped quote inside another string; one before a colon (58) an object key.
local function swap(text, needle, to)
  local parts, start, at = {}, 1, 1
  while true do
    local first, last = string.find(text, needle, at, true)
    if not first then break end
    if (first > 1 and string.byte(text, first - 1) == 92) or next_byte(text, last + 1) == 58 then
      at = first + 1
    else
      parts[#parts + 1] = string.sub(text, start, first - 1)
      parts[#parts + 1] = to
      start, at = last + 1, last + 1
    end
  end
  if start == 1 then return text, false end
  parts[#parts + 1] = string.sub(text, start)
  return table.concat(parts), true
end
-- text with every replacement made; nil when none was.
local function rewrite(text)
  local changed = false
  for _, needle in ipairs(needles) do
    for _, form in ipairs(needle.forms) do
      local hit
      text, hit = swap(text, form, needle.to)
      if hit then
        changed = true
        if not found[needle.from] then
          found[needle.from] = true
          count = count + 1
        end
      end
    end
  end
  if changed then return text end
  return nil
end

local fields = {'snapshot', 'output', 'error', 'wait'}
local values = redis.call('HMGET', KEYS[1], unpack(fields))
for i, name in ipairs(fields) do
  local new = values[i] and rewrite(values[i])
  if new then redis.call('HSET', KEYS[1], name, new) end
end

local journal = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #journal, 2 do
  local new = rewrite(journal[i])
  if new then
    redis.call('ZADD', KEYS[2], journal[i + 1], new)
    redis.call('ZREM', KEYS[2], journal[i])
  end
end

local mailbox = redis.call('HGETALL', KEYS[7])
for i = 1, #mailbox, 2 do
  local kind = string.sub(mailbox[i], 1, 4)
  if kind == 'sig:' or kind == 'dec:' then
    local new = rewrite(mailbox[i + 1])
    if new then redis.call('HSET', KEYS[7], mailbox[i], new) end
  end
end

local stream = KEYS[${streamKey}]
local entries = redis.call('XRANGE', stream, '-', '+')
local rebuild = false
for _, entry in ipairs(entries) do
  local chunk = entry[2]
  for j = 1, #chunk, 2 do
    if chunk[j] == 'part' then
      local new = rewrite(chunk[j + 1])
      if new then
        chunk[j + 1] = new
        rebuild = true
      end
    end
  end
end
if rebuild then
  local ttl = redis.call('PTTL', stream)
  redis.call('DEL', stream)
  for _, entry in ipairs(entries) do redis.call('XADD', stream, entry[1], unpack(entry[2])) end
  if ttl > 0 then redis.call('PEXPIRE', stream, ttl) end
end
return count
`,
);
