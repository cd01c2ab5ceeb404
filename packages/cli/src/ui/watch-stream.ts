import type { ServerResponse } from 'node:http';
import { isCairnError } from '@cairn/sdk';
import type { CairnClient } from '@cairn/worker';

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
 * A comment line this often: a proxy or a browser that hears nothing for a minute may drop the connection, and
 * a write is how a connection the browser dropped silently is noticed.
 */
const keepAliveMs = 15_000;

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
  response.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    // A reverse proxy (nginx) in front of the page must not hold events back in its buffer.
    'X-Accel-Buffering': 'no',
    // The connection ends with the stream: kept alive, it would hold up `close()` for the keep-alive timeout.
    Connection: 'close',
  });
  // Reconnect after a second, not the browser's default of three.
  response.write('retry: 1000\n\n');
  const keepAlive = setInterval(() => response.write(': keep-alive\n\n'), keepAliveMs);
  try {
    const events = client.watch(options.runId, {
      after: options.after,
      signal: options.signal,
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    });
    for await (const event of events) {
      // JSON has no raw newline, so the whole event is one `data:` line.
      response.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
    }
    if (!options.signal.aborted) response.write('event: end\ndata: {}\n\n');
  } catch (error) {
    const body = isCairnError(error)
      ? { code: error.code, message: error.message }
      : { code: 'INTERNAL', message: String(error) };
    if (!options.signal.aborted) response.write(`event: gone\ndata: ${JSON.stringify(body)}\n\n`);
  } finally {
    clearInterval(keepAlive);
    response.end();
  }
}
