import { lua } from '../client.js';

/**
 * Reads a run and its journal (in seq order) at one instant.
 * Returns {'missing'} or {'ok', HGETALL, journal entries JSON}.
 */
export const loadRun = lua(
  'load',
  `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
return {'ok', redis.call('HGETALL', KEYS[1]), redis.call('ZRANGE', KEYS[2], 0, -1)}
`,
);
