import type { ServerResponse } from 'node:http';
import { isCairnError } from '@cairn/sdk';
import type { CairnClient } from '@cairn/worker';
import { goneData, startSse } from './sse-response.js';

/** Options of `streamText`. */
export interface TextStreamOptions {
  runId: string;
  /** The last position the browser has: from `Last-Event-ID` on a reconnect, else from `?after=`. */
  after: number;
  /** How often the store is read for new chunks while none come. */
  pollMs?: number;
  /** Ends the stream: the browser went away or the server is closing. */
  signal: AbortSignal;
}

/**
 * Streams `client.stream` (what the run's model calls say, as they say it) as Server-Sent Events: each
 * `StreamChunk` as a message whose `id:` is its position, so an `EventSource` that reconnects sends
 * `Last-Event-ID` and gets each chunk once. When the stream ends (the run ended, or waits: the page opens it again
 * when the run goes on) it sends `event: end`; when the run is gone or the store fails for good, `event: gone`
 * with the error's code; on a store that keeps no streams, `event: none` once, so that the page stops asking. Each
 * ends the response, and the page closes its `EventSource` on it (else the browser would reconnect forever). The
 * caller has checked that the run exists, so a 404 was answered before any header went out.
 */
export async function streamText(
  client: CairnClient,
  response: ServerResponse,
  options: TextStreamOptions,
): Promise<void> {
  const sse = startSse(response);
  try {
    const chunks = client.stream(options.runId, {
      after: options.after,
      signal: options.signal,
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    });
    for await (const chunk of chunks) sse.message(chunk.position, chunk);
    if (!options.signal.aborted) sse.event('end', {});
  } catch (error) {
    if (options.signal.aborted) return;
    // The run id and `after` were checked before: `INVALID_ARGUMENT` is the store that keeps no streams.
    if (isCairnError(error) && error.code === 'INVALID_ARGUMENT')
      sse.event('none', goneData(error));
    else sse.event('gone', goneData(error));
  } finally {
    sse.end();
  }
}
