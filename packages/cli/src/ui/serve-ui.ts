import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CairnError, checkRunId } from '@cairn/sdk';
import type { CairnClient } from '@cairn/worker';
import { pageBundle } from './page-bundle.js';
import { pageCsp, pageEntry, pageHtml } from './page-html.js';
import { streamText } from './stream-sse.js';
import {
  errorResponse,
  listEvents,
  listRuns,
  notFound,
  parseAfter,
  showRun,
  type ApiResponse,
} from './ui-api.js';
import { streamWatch } from './watch-stream.js';

/** Options of `serveUi`. */
export interface ServeUiOptions {
  /** The client whose store the page shows; `serveUi` only reads through it. */
  client: CairnClient;
  /** The address to listen on. @defaultValue '127.0.0.1': only this machine can open the page */
  host?: string;
  /** @defaultValue 0: any free port (`url` says which) */
  port?: number;
  /**
   * How often a watched run's store record is read for new events, and its stream log for new text.
   * @defaultValue 250 for events, 100 for text (`client.watch`'s and `client.stream`'s)
   */
  pollMs?: number;
}

/** A running `cairn ui` server; `await using` closes it. */
export interface UiServer extends AsyncDisposable {
  /** Where the page is, e.g. `http://127.0.0.1:4321/`. */
  url: string;
  /** Ends every open watch and stops the server; calling it again waits for the same close. */
  close(): Promise<void>;
}

const loopbackNames = new Set(['localhost', '[::1]', '::1']);
/** An IPv4 address of the loopback block, 127.0.0.0/8, written in full. */
const loopbackIpv4 = /^127(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/**
 * Whether a host name or address is this machine: exactly `localhost`, `::1`, or an address of 127.0.0.0/8. A
 * name that only begins like one (`127.0.0.1.evil.example`) is another machine's: a page there that rebinds its
 * DNS name to 127.0.0.1 must not read the runs.
 */
export function isLoopback(host: string): boolean {
  return loopbackNames.has(host) || loopbackIpv4.test(host);
}

/** The host part of a `Host` header: `[::1]:80` is `[::1]`, `localhost:80` is `localhost`. */
function hostName(header: string | undefined): string {
  if (header === undefined) return '';
  const match = /^(\[[^\]]*\]|[^:]*)/.exec(header.toLowerCase());
  return match?.[1] ?? '';
}

function sendJson(response: ServerResponse, { status, body }: ApiResponse): void {
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
  });
  response.end(JSON.stringify(body));
}

type Route =
  | { name: 'page' }
  | { name: 'script' }
  | { name: 'list' }
  | { name: 'run' | 'events' | 'watch' | 'stream'; runId: string }
  | { name: 'none' };

/** Which route a path is; a run id is one percent-encoded path segment (ids may hold `/`). */
function route(pathname: string): Route {
  if (pathname === '/' || pathname === '/index.html') return { name: 'page' };
  if (pathname === '/api/runs') return { name: 'list' };
  if (pathname === pageEntry) return { name: 'script' };
  const match = /^\/api\/runs\/([^/]+)(?:\/(events|watch|stream))?$/.exec(pathname);
  if (match === null) return { name: 'none' };
  let runId: string;
  try {
    runId = decodeURIComponent(match[1]!);
  } catch {
    throw new CairnError(
      'INVALID_ARGUMENT',
      'The run id in the path is not valid percent-encoding.',
    );
  }
  checkRunId(runId);
  const sub = match[2] as 'events' | 'watch' | 'stream' | undefined;
  return { name: sub ?? 'run', runId };
}

/**
 * Serves the `cairn ui` page (its HTML and its script, `/ui/page.js`) and its JSON and Server-Sent Events API
 * on `node:http`: the list of runs, a run's timeline and plan, its events as they are written and the text its
 * model calls stream. Read-only. It binds to this machine unless `host` says otherwise, and while it does, it
 * refuses a `Host` header that names another machine, so a web page that rebinds its DNS name to 127.0.0.1
 * cannot read the runs through the visitor's browser.
 */
export async function serveUi(options: ServeUiOptions): Promise<UiServer> {
  const { client, pollMs } = options;
  const host = options.host ?? '127.0.0.1';
  const closing = new AbortController();
  const checkHost = isLoopback(host);
  const pageScript = pageBundle();

  /**
   * Runs an event stream until it ends by itself, the browser goes away or the server closes. A reconnecting
   * EventSource names the last event it got; its URL still has the first `after`. An unknown run is answered as
   * JSON before the stream starts, so that it is a 404, not an empty stream.
   */
  const eventStream = async (
    request: IncomingMessage,
    response: ServerResponse,
    runId: string,
    query: URLSearchParams,
    stream: typeof streamWatch,
  ): Promise<void> => {
    const lastEventId = request.headers['last-event-id'];
    const after = parseAfter(typeof lastEventId === 'string' ? lastEventId : query.get('after'));
    if ((await client.get(runId)) === undefined) {
      sendJson(response, notFound(runId));
      return;
    }
    const gone = new AbortController();
    const stop = () => gone.abort();
    response.once('close', stop);
    closing.signal.addEventListener('abort', stop, { once: true });
    if (closing.signal.aborted) stop();
    try {
      await stream(client, response, {
        runId,
        after,
        signal: gone.signal,
        ...(pollMs === undefined ? {} : { pollMs }),
      });
    } finally {
      closing.signal.removeEventListener('abort', stop);
    }
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.setHeader('Referrer-Policy', 'no-referrer');
    if (checkHost && !isLoopback(hostName(request.headers.host))) {
      sendJson(response, {
        status: 403,
        body: { error: { code: 'FORBIDDEN', message: 'This page answers only to localhost.' } },
      });
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('Allow', 'GET, HEAD');
      sendJson(response, {
        status: 405,
        body: { error: { code: 'METHOD_NOT_ALLOWED', message: 'The page is read-only.' } },
      });
      return;
    }
    const url = new URL(request.url ?? '/', 'http://ui.invalid');
    const where = route(url.pathname);
    switch (where.name) {
      case 'page':
        response.writeHead(200, {
          'Content-Type': 'text/html; charset=utf-8',
          'Content-Security-Policy': pageCsp,
          'Cache-Control': 'no-store',
        });
        response.end(pageHtml);
        return;
      case 'list':
        sendJson(response, await listRuns(client, url.searchParams));
        return;
      case 'run':
        sendJson(response, await showRun(client, where.runId));
        return;
      case 'events':
        sendJson(response, await listEvents(client, where.runId, url.searchParams));
        return;
      case 'script': {
        response.writeHead(200, {
          'Content-Type': 'text/javascript; charset=utf-8',
          'Cache-Control': 'no-store',
        });
        response.end(await pageScript());
        return;
      }
      case 'watch':
        await eventStream(request, response, where.runId, url.searchParams, streamWatch);
        return;
      case 'stream':
        await eventStream(request, response, where.runId, url.searchParams, streamText);
        return;
      case 'none':
        break;
    }
    sendJson(response, {
      status: 404,
      body: { error: { code: 'NOT_FOUND', message: `Nothing at ${url.pathname}.` } },
    });
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) response.end();
      else sendJson(response, errorResponse(error));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  // Closing twice (a signal handler and a `finally`) waits for the one close.
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= new Promise<void>((resolve, reject) => {
      closing.abort();
      server.close((error) => (error === undefined ? resolve() : reject(error)));
      // Keep-alive sockets of finished requests would hold `close` open until they time out.
      server.closeIdleConnections();
    }));
  return { url: `http://${shownHost}:${port}/`, close, [Symbol.asyncDispose]: close };
}
