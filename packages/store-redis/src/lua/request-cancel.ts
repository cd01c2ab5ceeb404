import { lua } from '../client.js';
import { prelude } from './prelude.js';

/** Flags a run that has not ended for cancellation. Returns 1 when the flag was set, else 0. */
export const requestCancel = lua(
  'request-cancel',
  `${prelude}
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if terminal[redis.call('HGET', KEYS[1], 'status')] then return 0 end
redis.call('HSET', KEYS[1], 'cancel', '1', 'updatedAt', num(now_ms()))
return 1
`,
);
