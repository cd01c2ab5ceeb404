import { lua } from '../client.js';
import { prelude } from './prelude.js';

/**
 * Reads a run's mailbox: the JSON of the signals no checkpoint consumed, in seq order; {} for an unknown run.
 */
export const readMailbox = lua(
  'mailbox',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
return unconsumed_signals()
`,
);
