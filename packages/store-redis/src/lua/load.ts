import { lua } from '../client.js';

/** Reads a run and its journal at one instant. Returns {'missing'} or {'ok', HGETALL, journal}. */
export const loadRun = lua(
  'load',
  `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
return {'ok', redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1)}
`,
);
