import type { ServerResponse } from 'node:http';
import { isCairnError } from '@cairn/sdk';

/** A Server-Sent Events response being written. */
export interface SseResponse {
  /** A message: `id:` (the browser's `Last-Event-ID` on a reconnect) and one `data:` line of JSON. */
  message(id: number, data: unknown): void;
  /** A named event (`end`, `gone`...) with JSON data. */
  event(name: string, data: unknown): void;
  /** Stops the keep-alive and ends the response. */
  end(): void;
}

/**
 * A comment line this often: a proxy or a browser that hears nothing for a minute may drop the connection, and
 * a write is how a connection the browser dropped silently is noticed.
 */
const keepAliveMs = 15_000;

/** Starts an event stream on `response`: its headers, the reconnect delay, and a keep-alive comment. */
export function startSse(response: ServerResponse): SseResponse {
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
  return {
    // JSON has no raw newline, so the whole value is one `data:` line.
    message: (id, data) => void response.write(`id: ${id}\ndata: ${JSON.stringify(data)}\n\n`),
    event: (name, data) => void response.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    end: () => {
      clearInterval(keepAlive);
      response.end();
    },
  };
}

/** The data of an `event: gone`: the error's stable code and its message. */
export function goneData(error: unknown): { code: string; message: string } {
  return isCairnError(error)
    ? { code: error.code, message: error.message }
    : { code: 'INTERNAL', message: String(error) };
}
