import {
  cairnChatTransport,
  uiMessageStreamResponse,
  visibleParts,
  type UIMessageChunk,
} from '@cairn/ai-sdk';
import type { StreamChunk } from '@cairn/sdk';
import {
  readUIMessageStream,
  type ChatTransport,
  type UIMessage,
  type UIMessageChunk as AiChunk,
} from 'ai';
import { describe, expect, it } from 'vitest';

const answer = ['Order ', '42 ', 'was ', 'refunded ', 'in ', 'full.'];
const log: StreamChunk[] = answer.map((text, i) => ({
  position: i + 1,
  unit: 'trip-0/model',
  part: { type: 'text', text },
  at: 0,
}));

/** A chat route over a run's log, as an app serves it with uiMessageStreamResponse; records what it was asked. */
function chatRoute() {
  const asked: Array<{ method: string; url: string; lastEventId: string | null }> = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    asked.push({
      method: request.method,
      url: request.url,
      lastEventId: request.headers.get('last-event-id'),
    });
    if (request.url.endsWith('/cancel')) return new Response(null, { status: 204 });
    async function* read(after: number) {
      for (const chunk of log) if (chunk.position > after) yield chunk;
    }
    return uiMessageStreamResponse(read, { request, messageId: 'run-1' });
  };
  return { fetch: fetch as typeof globalThis.fetch, asked };
}

function memoryStorage() {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
  };
}

/** Reads `count` chunks of a stream, then drops it (a connection lost, a page reloaded). */
async function readSome(stream: ReadableStream<UIMessageChunk>, count: number) {
  const reader = stream.getReader();
  const read: UIMessageChunk[] = [];
  while (read.length < count) read.push((await reader.read()).value!);
  await reader.cancel();
  return read;
}

async function messageOf(chunks: UIMessageChunk[], message?: UIMessage): Promise<UIMessage> {
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk as never);
      controller.close();
    },
  });
  let last = message;
  for await (const next of readUIMessageStream({
    stream,
    ...(message ? { message } : {}),
    terminateOnError: true,
  }))
    last = next;
  return last!;
}

const textOf = (message: UIMessage) =>
  visibleParts(message)
    .filter((part) => part.type === 'text')
    .map((part) => (part as { text: string }).text)
    .join('');

describe('cairnChatTransport', () => {
  it('is a ChatTransport of the AI SDK it is given the chunk type of', () => {
    const transport: ChatTransport<UIMessage> = cairnChatTransport<AiChunk>({ api: '/api/chat' });
    // A reloaded page lost what it showed: the resumed stream is the whole answer again, and useChat clears first.
    expect(transport.resumeStreamIsReplay).toBe(true);
  });

  it('resumes after a reload by reading the run again from its start: the message is the answer, nothing twice', async () => {
    const { fetch, asked } = chatRoute();
    const storage = memoryStorage();
    const transport = cairnChatTransport({ api: 'http://app/api/chat', fetch, storage });
    const first = await transport.sendMessages({
      trigger: 'submit-message',
      chatId: 'c-1',
      messageId: undefined,
      messages: [{ id: 'u-1', role: 'user', parts: [{ type: 'text', text: 'refund 42' }] }],
      abortSignal: undefined,
    });
    // start, text-start, two deltas: positions 1 and 2 were read before the drop.
    const before = await readSome(first, 4);
    expect(storage.items.get('cairn:stream:c-1')).toBe('2');
    const partial = await messageOf(before);
    expect(textOf(partial)).toBe('Order 42 ');
    // The page reloads (useChat's resume, with the message it had shown gone): the run's stream from its start.
    const again = await transport.reconnectToStream({ chatId: 'c-1' });
    expect(asked.at(-1)).toMatchObject({
      method: 'GET',
      url: 'http://app/api/chat/c-1/stream',
      lastEventId: null,
    });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of again! as unknown as AsyncIterable<UIMessageChunk>)
      chunks.push(chunk);
    const whole = await messageOf(chunks);
    expect(textOf(whole)).toBe(answer.join(''));
    // The stream ended: nothing left to resume.
    expect(storage.items.has('cairn:stream:c-1')).toBe(false);
    expect(await transport.reconnectToStream({ chatId: 'c-1' })).toBeNull();
  });

  it('cancels the run when useChat stops, and sends the chat with its messages to the route', async () => {
    const { fetch, asked } = chatRoute();
    const transport = cairnChatTransport({
      api: 'http://app/api/chat',
      fetch,
      storage: memoryStorage(),
    });
    const stop = new AbortController();
    const stream = await transport.sendMessages({
      trigger: 'submit-message',
      chatId: 'c-2',
      messageId: undefined,
      messages: [],
      abortSignal: stop.signal,
      body: { tenant: 't-1' },
    });
    await readSome(stream, 2);
    stop.abort();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(asked.map((a) => `${a.method} ${a.url}`)).toEqual([
      'POST http://app/api/chat',
      'POST http://app/api/chat/c-2/cancel',
    ]);
  });
});
