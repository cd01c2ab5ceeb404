import type { UIMessageChunk } from './ui-parts.js';

/**
 * Where the transport notes the chats it is reading (with the last position read), so a reloaded page knows to
 * resume: `sessionStorage` fits (it outlives a reload).
 */
export interface PositionStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Options of `cairnChatTransport`. */
export interface CairnChatTransportOptions {
  /**
   * The route that starts a run: POSTed `{ chatId, trigger, messageId, messages, ...body }`, it answers with
   * `uiMessageStreamResponse` of the run it started.
   */
  api: string;
  /** The route a reloaded page resumes from. @defaultValue `${api}/${chatId}/stream` */
  streamApi?: (chatId: string) => string;
  /** The route `stop()` POSTs to, which cancels the run. @defaultValue `${api}/${chatId}/cancel` */
  cancelApi?: (chatId: string) => string;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
  /** @defaultValue `sessionStorage` where there is one, else this transport's memory */
  storage?: PositionStorage;
  headers?: Record<string, string>;
}

/**
 * What `useChat` asks of a transport (the AI SDK's `ChatTransport`, AI SDK 6 and 7). `Chunk` is the chunk type
 * the caller's AI SDK names (`UIMessageChunk` from `ai`), so it is a `ChatTransport` of that version.
 */
export interface CairnChatTransport<Chunk = UIMessageChunk> {
  readonly resumeStreamIsReplay: true;
  sendMessages(options: {
    trigger: 'submit-message' | 'regenerate-message';
    chatId: string;
    messageId: string | undefined;
    messages: unknown[];
    abortSignal: AbortSignal | undefined;
    headers?: Record<string, string> | Headers;
    body?: object;
  }): Promise<ReadableStream<Chunk>>;
  reconnectToStream(options: {
    chatId: string;
    abortSignal?: AbortSignal;
    headers?: Record<string, string> | Headers;
  }): Promise<ReadableStream<Chunk> | null>;
}

/**
 * A `useChat` transport for runs Cairn streams: `sendMessages` starts a run through `api` and reads its UI message
 * stream, noting the chat in `storage` until the stream ends; `reconnectToStream` (`useChat({ resume: true })`
 * on a reloaded page) reads the run's stream again from its first chunk, and `useChat` rebuilds the answer from it
 * (a reloaded page lost the part it had shown, so the rest alone would not do); `stop()` cancels the run. Pass it
 * to `useChat({ transport: cairnChatTransport<UIMessageChunk>({ api: '/api/chat' }), resume: true })`, with the
 * `UIMessageChunk` type of your `ai`. (A reader that keeps what it was shown goes on from its last position with
 * `Last-Event-ID` instead: the route's `uiMessageStreamResponse` honours it.)
 */
export function cairnChatTransport<Chunk = UIMessageChunk>(
  options: CairnChatTransportOptions,
): CairnChatTransport<Chunk> {
  const call = options.fetch ?? globalThis.fetch.bind(globalThis);
  const storage = options.storage ?? defaultStorage();
  const key = (chatId: string) => `cairn:stream:${chatId}`;
  const streamApi =
    options.streamApi ?? ((chatId) => `${options.api}/${encodeURIComponent(chatId)}/stream`);
  const cancelApi =
    options.cancelApi ?? ((chatId) => `${options.api}/${encodeURIComponent(chatId)}/cancel`);
  const headersOf = (extra?: Record<string, string> | Headers) => ({
    ...options.headers,
    ...(extra instanceof Headers ? Object.fromEntries(extra.entries()) : extra),
  });

  const read = (chatId: string, response: Response): ReadableStream<Chunk> => {
    if (!response.ok || response.body === null) {
      throw new Error(`The chat route answered ${response.status} ${response.statusText}`);
    }
    return response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
      sseChunks<Chunk>(
        (position) => storage.setItem(key(chatId), String(position)),
        () => storage.removeItem(key(chatId)),
      ),
    );
  };

  return {
    // useChat clears the message it was streaming at the replay's first `start`: nothing is shown twice.
    resumeStreamIsReplay: true,
    async sendMessages({ chatId, trigger, messageId, messages, abortSignal, headers, body }) {
      storage.removeItem(key(chatId));
      // stop() aborts the request: the run is cancelled too, not left running unseen.
      abortSignal?.addEventListener(
        'abort',
        () =>
          void call(cancelApi(chatId), { method: 'POST', headers: headersOf(headers) }).catch(
            () => undefined,
          ),
        { once: true },
      );
      const response = await call(options.api, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headersOf(headers) },
        body: JSON.stringify({ ...body, chatId, trigger, messageId, messages }),
        ...(abortSignal === undefined ? {} : { signal: abortSignal }),
      });
      return read(chatId, response);
    },
    async reconnectToStream({ chatId, abortSignal, headers }) {
      if (storage.getItem(key(chatId)) === null) return null; // nothing this page was reading
      const response = await call(streamApi(chatId), {
        headers: headersOf(headers),
        ...(abortSignal === undefined ? {} : { signal: abortSignal }),
      });
      if (response.status === 204 || response.status === 404) {
        storage.removeItem(key(chatId));
        return null;
      }
      return read(chatId, response);
    },
  };
}

/**
 * Server-sent events into UI message chunks: `onPosition` with each event's id once its chunk is passed on,
 * `onDone` at `[DONE]`.
 */
function sseChunks<Chunk>(
  onPosition: (position: number) => void,
  onDone: () => void,
): TransformStream<string, Chunk> {
  let buffer = '';
  return new TransformStream({
    transform(text, controller) {
      buffer += text;
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) id = line.slice(3).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
        }
        const payload = data.join('\n');
        if (payload === '[DONE]') onDone();
        else if (payload !== '') {
          controller.enqueue(JSON.parse(payload) as Chunk);
          if (id !== undefined && /^\d+$/.test(id)) onPosition(Number(id));
        }
        end = buffer.indexOf('\n\n');
      }
    },
  });
}

function defaultStorage(): PositionStorage {
  const session = (globalThis as { sessionStorage?: PositionStorage }).sessionStorage;
  if (session !== undefined) return session;
  const memory = new Map<string, string>();
  return {
    getItem: (k) => memory.get(k) ?? null,
    setItem: (k, v) => void memory.set(k, v),
    removeItem: (k) => void memory.delete(k),
  };
}
