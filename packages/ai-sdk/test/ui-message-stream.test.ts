import {
  UIMessageMapper,
  uiMessageStreamResponse,
  visibleParts,
  type UIMessageChunk,
} from '@cairn/ai-sdk';
import type { StreamChunk, StreamPart } from '@cairn/sdk';
import { readUIMessageStream as readV6, type UIMessage } from 'ai';
import { readUIMessageStream as readV7 } from 'ai-v7';
import { describe, expect, it } from 'vitest';

let position = 0;
const chunk = (unit: string, part: StreamPart): StreamChunk => ({
  position: (position += 1),
  unit,
  part,
  at: 0,
});
const text = (unit: string, value: string) => chunk(unit, { type: 'text', text: value });

/** A run's log: a tool call's input, an answer cut by a crash and superseded, then the whole answer. */
function runLog(): StreamChunk[] {
  position = 0;
  return [
    chunk('trip-0/model', { type: 'reasoning', text: 'Look the order up.' }),
    chunk('trip-0/model', { type: 'tool-input-start', toolCallId: 'look', toolName: 'lookup' }),
    chunk('trip-0/model', { type: 'tool-input', toolCallId: 'look', delta: '{"order":' }),
    chunk('trip-0/model', { type: 'tool-input', toolCallId: 'look', delta: '"42"}' }),
    text('trip-1/model', 'Refunded '),
    text('trip-1/model', 'in fu'),
    chunk('trip-1/model', { type: 'superseded' }),
    text('trip-1/model', 'Order 42 '),
    text('trip-1/model', 'was refunded.'),
  ];
}

async function* replay(chunks: readonly StreamChunk[], after: number) {
  for (const c of chunks) if (c.position > after) yield c;
}

/** The SSE events of a response: each one's id and its parsed data. */
async function events(response: Response) {
  const body = await response.text();
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const id = /^id: (\d+)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)![1]!;
      return {
        id: id === undefined ? undefined : Number(id),
        data: data === '[DONE]' ? data : (JSON.parse(data) as UIMessageChunk),
      };
    });
}

/** What useChat's own state machine makes of the chunks (it throws on a delta of a part never started). */
async function lastMessage(read: typeof readV6, chunks: UIMessageChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c as never);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  const errors: unknown[] = [];
  for await (const message of read({
    stream,
    onError: (e) => errors.push(e),
    terminateOnError: true,
  }))
    last = message as UIMessage;
  expect(errors).toEqual([]);
  return last!;
}

const dataOf = (all: Awaited<ReturnType<typeof events>>) =>
  all.map((e) => e.data).filter((d): d is UIMessageChunk => d !== '[DONE]');

describe('the UI message stream of a run', () => {
  it.each([
    ['AI SDK 6', readV6],
    ['AI SDK 7', readV7 as unknown as typeof readV6],
  ])(
    'is read by %s’s useChat state machine: text, reasoning, tool input, and the superseded parts named',
    async (_, read) => {
      const log = runLog();
      const response = uiMessageStreamResponse((after) => replay(log, after), {
        messageId: 'run-1',
      });
      expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
      const all = await events(response);
      expect(all.at(-1)!.data).toBe('[DONE]');
      // Every position is the id of exactly one event: a browser resumes from the last one it saw.
      expect(all.flatMap((e) => (e.id === undefined ? [] : [e.id]))).toEqual(
        log.map((c) => c.position),
      );
      const message = await lastMessage(read, dataOf(all));
      expect(message.id).toBe('run-1');
      const superseded = message.parts.find((p) => p.type === 'data-cairn-superseded') as {
        data: { partIds: string[]; positions: number[] };
      };
      expect(superseded.data.positions).toEqual([5, 6]);
      // What a client shows once it drops the parts a marker names: the final answer only.
      const texts = message.parts.filter((p) => p.type === 'text') as Array<{ text: string }>;
      expect(texts.map((p) => p.text)).toEqual(['Refunded in fu', 'Order 42 was refunded.']);
      expect(superseded.data.partIds).toHaveLength(1);
      // What a page renders with visibleParts: the superseded text and the marker are gone, the rest is kept.
      const shown = visibleParts(message);
      expect(
        shown.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text),
      ).toEqual(['Order 42 was refunded.']);
      expect(shown.some((p) => p.type === 'data-cairn-superseded')).toBe(false);
      expect(shown.some((p) => (p as { toolCallId?: string }).toolCallId === 'look')).toBe(true);
      expect(shown.some((p) => p.type === 'reasoning')).toBe(true);
      expect(message.parts.some((p) => p.type === 'reasoning')).toBe(true);
    },
  );

  it.each([
    ['AI SDK 6', readV6],
    ['AI SDK 7', readV7 as unknown as typeof readV6],
  ])(
    'makes a tool call’s input available once its model call has ended, as a call the server runs (%s)',
    async (_, read) => {
      position = 0;
      const log = [
        chunk('trip-0/model', { type: 'tool-input-start', toolCallId: 'look', toolName: 'lookup' }),
        chunk('trip-0/model', { type: 'tool-input', toolCallId: 'look', delta: '{"order":' }),
        chunk('trip-0/model', { type: 'tool-input', toolCallId: 'look', delta: '"42"}' }),
        chunk('trip-0/model', { type: 'tool-input-start', toolCallId: 'bad', toolName: 'lookup' }),
        chunk('trip-0/model', { type: 'tool-input', toolCallId: 'bad', delta: '{"order' }),
        chunk('trip-0/model', { type: 'tool-input-start', toolCallId: 'none', toolName: 'clock' }),
        text('trip-1/model', 'Order 42 was refunded.'),
      ];
      const all = dataOf(await events(uiMessageStreamResponse((after) => replay(log, after), {})));
      // Still streaming its input while its model call speaks; available when the next call speaks.
      const available = all.findIndex((c) => c.type === 'tool-input-available');
      expect(available).toBeGreaterThan(all.findIndex((c) => c.toolCallId === 'none'));
      const message = await lastMessage(read, all);
      const tools = message.parts.filter((p) => 'toolCallId' in p) as unknown as Array<{
        toolCallId: string;
        state: string;
        input: unknown;
        errorText?: string;
        providerExecuted?: boolean;
      }>;
      expect(tools.map(({ toolCallId, state }) => ({ toolCallId, state }))).toEqual([
        { toolCallId: 'look', state: 'input-available' },
        { toolCallId: 'bad', state: 'output-error' }, // the input AI SDK 6 keeps of it: none
        { toolCallId: 'none', state: 'input-available' },
      ]);
      expect([tools[0]!.input, tools[2]!.input]).toEqual([{ order: '42' }, {}]);
      expect(tools[1]!.errorText).toMatch(/not JSON/);
      // Not the page's to run: useChat's onToolCall is not called for them.
      expect(tools.every((tool) => tool.providerExecuted === true)).toBe(true);
    },
  );

  it.each([
    ['AI SDK 6', readV6],
    ['AI SDK 7', readV7 as unknown as typeof readV6],
  ])(
    'shows how each call the worker made settled: its output, its error, an outcome unknown after a crash (%s)',
    async (_, read) => {
      position = 0;
      const start = (id: string, toolName: string) =>
        chunk('trip-0/model', { type: 'tool-input-start', toolCallId: id, toolName });
      const log = [
        start('look', 'lookup'),
        chunk('trip-0/model', { type: 'tool-input', toolCallId: 'look', delta: '{"order":"42"}' }),
        start('pay', 'refund'),
        start('mail', 'email'),
        start('big', 'export'),
        chunk('trip-0/tool-look', {
          type: 'tool-outcome',
          toolCallId: 'look',
          outcome: 'ok',
          output: { total: 500 },
        }),
        chunk('trip-0/tool-mail', {
          type: 'tool-outcome',
          toolCallId: 'mail',
          outcome: 'error',
          errorText: 'the mailbox is full',
        }),
        chunk('trip-0/tool-big', {
          type: 'tool-outcome',
          toolCallId: 'big',
          outcome: 'ok',
          truncated: true,
        }),
        // The holder died while `pay` ran; the next one says its outcome is unknown.
        chunk('trip-0/tool-pay', {
          type: 'tool-outcome',
          toolCallId: 'pay',
          outcome: 'unknown',
          errorText: 'This tool call was in flight when the run was interrupted.',
        }),
        // A call with no part on the page (its start superseded, or never streamed) gets no outcome.
        chunk('trip-0/tool-ghost', {
          type: 'tool-outcome',
          toolCallId: 'ghost',
          outcome: 'ok',
          output: 1,
        }),
        text('trip-1/model', 'Refunded, maybe: please check.'),
      ];
      const all = dataOf(await events(uiMessageStreamResponse((after) => replay(log, after), {})));
      expect(all.some((c) => c.toolCallId === 'ghost')).toBe(false);
      const message = await lastMessage(read, all);
      const tools = message.parts.filter((p) => 'toolCallId' in p) as unknown as Array<{
        toolCallId: string;
        state: string;
        output?: unknown;
        errorText?: string;
      }>;
      expect(tools.map(({ toolCallId, state }) => ({ toolCallId, state }))).toEqual([
        { toolCallId: 'look', state: 'output-available' },
        { toolCallId: 'pay', state: 'output-error' },
        { toolCallId: 'mail', state: 'output-error' },
        { toolCallId: 'big', state: 'output-available' },
      ]);
      expect(tools[0]!.output).toEqual({ total: 500 });
      expect(tools[1]!.errorText).toMatch(/in flight when the run was interrupted/);
      expect(tools[2]!.errorText).toBe('the mailbox is full');
      expect(tools[3]!.output).toMatchObject({ truncated: true });
      expect(visibleParts(message).filter((p) => 'toolCallId' in p)).toHaveLength(4);
    },
  );

  it('gives no outcome to a call whose start was superseded', () => {
    position = 0;
    const mapper = new UIMessageMapper();
    const out = [
      chunk('trip-0/model', { type: 'tool-input-start', toolCallId: 'a', toolName: 'lookup' }),
      chunk('trip-0/model', { type: 'superseded' }),
      chunk('trip-0/model', { type: 'tool-input-start', toolCallId: 'b', toolName: 'lookup' }),
      chunk('trip-0/tool-a', { type: 'tool-outcome', toolCallId: 'a', outcome: 'ok', output: 1 }),
      chunk('trip-0/tool-b', { type: 'tool-outcome', toolCallId: 'b', outcome: 'ok', output: 2 }),
    ].flatMap((c) => mapper.map(c));
    expect(out.filter((c) => c.type === 'tool-output-available')).toEqual([
      { type: 'tool-output-available', toolCallId: 'b', output: 2, providerExecuted: true },
    ]);
    // The call's input was made available before its output, as the client's state machine needs.
    const available = out.findIndex((c) => c.type === 'tool-input-available');
    expect(available).toBeGreaterThanOrEqual(0);
    expect(available).toBeLessThan(out.findIndex((c) => c.type === 'tool-output-available'));
  });

  it('makes the input of the last model call’s tool calls available when the stream ends (a run waiting for approval)', async () => {
    position = 0;
    const log = [
      chunk('trip-0/model', { type: 'tool-input-start', toolCallId: 'r', toolName: 'refund' }),
      chunk('trip-0/model', { type: 'tool-input', toolCallId: 'r', delta: '{"cents":500}' }),
    ];
    const all = dataOf(await events(uiMessageStreamResponse((after) => replay(log, after), {})));
    expect(all.find((c) => c.type === 'tool-input-available')).toMatchObject({
      toolCallId: 'r',
      toolName: 'refund',
      input: { cents: 500 },
      providerExecuted: true,
    });
    expect(all.at(-1)).toEqual({ type: 'finish' });
  });

  it('sends nothing for a marker of a unit that said nothing before it (a trip after a wait)', () => {
    position = 0;
    const mapper = new UIMessageMapper();
    const out = [
      text('trip-0/model', 'I will wait.'),
      chunk('trip-1/model', { type: 'superseded' }),
      text('trip-1/model', 'Back again.'),
    ].flatMap((c) => mapper.map(c));
    expect(out.some((c) => c.type === 'data-cairn-superseded')).toBe(false);
    expect(out.filter((c) => c.type === 'text-delta').map((c) => c.delta)).toEqual([
      'I will wait.',
      'Back again.',
    ]);
  });

  it('resumes from Last-Event-ID inside an open part by sending its start again, and nothing seen twice', async () => {
    const log = runLog();
    const request = new Request('http://localhost/chat/run-1/stream', {
      headers: { 'Last-Event-ID': '8' },
    });
    const resumed = dataOf(
      await events(uiMessageStreamResponse((after) => replay(log, after), { request })),
    );
    expect(resumed.slice(0, 2)).toEqual([
      { type: 'start' },
      { type: 'text-start', id: expect.any(String), providerMetadata: expect.any(Object) },
    ]);
    const message = await lastMessage(readV6, resumed);
    expect(
      message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text),
    ).toEqual(['Order 42 was refunded.'.slice('Order 42 '.length)]);
  });

  it('ends the parts of a unit when another unit speaks, and starts a new part when the kind changes', () => {
    position = 0;
    const mapper = new UIMessageMapper();
    const out = [
      text('a', 'x'),
      chunk('a', { type: 'reasoning', text: 'y' }),
      text('b', 'z'),
    ].flatMap((c) => mapper.map(c));
    expect(out.map((c) => c.type)).toEqual([
      'text-start',
      'text-delta',
      'text-end',
      'reasoning-start',
      'reasoning-delta',
      'reasoning-end',
      'text-start',
      'text-delta',
    ]);
    expect(mapper.finish()).toEqual([{ type: 'text-end', id: expect.any(String) }]);
    expect(out[0]).toMatchObject({ providerMetadata: { cairn: { partId: out[0]!.id } } });
  });

  it.each([
    ['at the last position', '9'],
    ['past the last position', '40'],
    ['inside a tool call’s input', '3'],
  ])('resumes %s and keeps the state machine valid', async (_, lastEventId) => {
    const log = runLog();
    const request = new Request('http://localhost/stream', {
      headers: { 'Last-Event-ID': lastEventId },
    });
    const resumed = dataOf(
      await events(uiMessageStreamResponse((after) => replay(log, after), { request })),
    );
    const message = await lastMessage(readV6, resumed);
    if (lastEventId === '3') {
      const tool = message.parts.find((p) => (p as { toolCallId?: string }).toolCallId === 'look');
      expect(tool).toBeDefined();
    }
  });

  it('drops a tool call’s input that has no start, and stops reading when the reader goes away', async () => {
    position = 0;
    const orphan = [
      text('trip-0/model', 'Hello'),
      chunk('trip-0/model', { type: 'tool-input', toolCallId: 'nobody', delta: '{}' }),
    ];
    const message = await lastMessage(
      readV6,
      dataOf(await events(uiMessageStreamResponse((after) => replay(orphan, after)))),
    );
    expect(message.parts.filter((p) => p.type === 'text')).toHaveLength(1);
    let stopped: AbortSignal | undefined;
    const response = uiMessageStreamResponse((_after, signal) => {
      stopped = signal;
      return (async function* () {
        yield text('a', 'x');
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      })();
    });
    const reader = response.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(stopped?.aborted).toBe(true);
  });
});
