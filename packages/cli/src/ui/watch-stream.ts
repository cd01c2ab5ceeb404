import type { ServerResponse } from 'node:http';
import type { CairnClient } from '@cairn/worker';
import { goneData, startSse } from './sse-response.js';

/** Options of `streamWatch`. */
export interface WatchStreamOptions {
  runId: string;
  /** The last `seq` the browser has: from `Last-Event-ID` on a reconnect, else from `?after=`. */
  after: number;
  /** How often the store is read for new events. */
  pollMs?: number;
  /** Ends the stream: the browser went away or the server is closing. */
  signal: AbortSignal;
}

/**
 * Streams `client.watch` as Server-Sent Events: each `RunEvent` as a message whose `id:` is its `seq`, so an
 * `EventSource` that reconnects sends `Last-Event-ID` and gets each event once. When the run ends it sends
 * `event: end`, on which the page closes its `EventSource` (else the browser would reconnect forever); when the
 * run is gone (discarded while watched) or the store fails for good it sends `event: gone` with the error's code.
 * The caller has checked that the run exists, so a 404 was answered before any header went out.
 */
export async function streamWatch(
  client: CairnClient,
  response: ServerResponse,
  options: WatchStreamOptions,
): Promise<void> {
  const sse = startSse(response);
  try {
    const events = client.watch(options.runId, {
      after: options.after,
      signal: options.signal,
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    });
    for await (const event of events) sse.message(event.seq, event);
    if (!options.signal.aborted) sse.event('end', {});
  } catch (error) {
    if (!options.signal.aborted) sse.event('gone', goneData(error));
  } finally {
    sse.end();
  }
}
