import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Reads a run, its journal (in seq order) and its unconsumed signals (in seq order) at one instant.
 * Returns {'missing'} or {'ok', HGETALL, journal entries JSON, signals JSON}.
 */
export const loadRun = lua(
  'load',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
return {'ok', redis.call('HGETALL', KEYS[1]), redis.call('ZRANGE', KEYS[2], 0, -1), unconsumed_signals()}
`,
);
