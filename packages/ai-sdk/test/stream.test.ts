import { APICallError, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { APICallError as APICallErrorV4 } from '@ai-sdk/provider-v4';
import { aiSdkModel, type LanguageModelV4Compatible } from '@cairn/ai-sdk';
import {
  CairnError,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamPart,
} from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { generateResult, mockModel, mockProvider, specs, streamParts } from './mock-provider.js';

const request = (signal = new AbortController().signal): ModelRequest => ({
  messages: [{ role: 'user', content: '2 + 3?' }],
  tools: [
    {
      name: 'add',
      description: 'Adds.',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    },
  ],
  signal,
});

/** Streams a model's answer to `request`: the parts `onPart` got, in order, and the answer. */
async function streamed(model: Model) {
  const parts: ModelStreamPart[] = [];
  const response = await model.stream!(request(), (part) => parts.push(part));
  return { parts, response };
}

/** What a model's stream fails with. */
const failureOf = (model: Model) => model.stream!(request(), () => {}).catch((e: unknown) => e);

/** A stream that gives `parts` one a read, then fails with `error`. */
function failingStream(parts: LanguageModelV3StreamPart[], error: unknown) {
  let next = 0;
  return new ReadableStream<LanguageModelV3StreamPart>({
    pull(controller) {
      if (next < parts.length) controller.enqueue(parts[next++]!);
      else controller.error(error);
    },
  });
}

const finish: LanguageModelV3StreamPart = {
  type: 'finish',
  usage: generateResult({ input: 3, output: 1 }).usage,
  finishReason: { unified: 'stop', raw: 'stop' },
};

describe.each(specs)('stream of an AI SDK model of specification %s', (spec) => {
  const ApiError = spec === 'v3' ? APICallError : APICallErrorV4;
  const apiError = (statusCode: number) =>
    new ApiError({
      message: 'provider said no',
      url: 'https://api.example/v1/chat',
      requestBodyValues: {},
      statusCode,
      responseHeaders: { 'retry-after-ms': '1200' },
    });

  it('passes reasoning and text on a delta at a time, in order, and answers what generate answers', async () => {
    const turn = { reasoning: 'Two and three. ', text: 'It is 5.', input: 12, output: 7 };
    const languageModel = mockProvider([turn], 'mock-model', spec);
    expect(languageModel.specificationVersion).toBe(spec);
    const model = aiSdkModel(languageModel, { settings: { temperature: 0 } });
    const { parts, response } = await streamed(model);
    expect(parts).toEqual([
      { type: 'reasoning', text: 'Two ' },
      { type: 'reasoning', text: 'and ' },
      { type: 'reasoning', text: 'three. ' },
      { type: 'text', text: 'It ' },
      { type: 'text', text: 'is ' },
      { type: 'text', text: '5.' },
    ]);
    const expected: ModelResponse = {
      message: { role: 'assistant', content: 'It is 5.' },
      toolCalls: [],
      usage: { inputTokens: 12, outputTokens: 7, totalTokens: 19 },
      finishReason: 'stop',
    };
    expect(response).toEqual(expected);
    expect(await model.generate(request())).toEqual(expected);
    // The same call as generate's, the run's signal with it.
    const { abortSignal, ...call } = languageModel.doStreamCalls[0]!;
    const { abortSignal: _, ...generateCall } = languageModel.doGenerateCalls[0]!;
    expect(call).toEqual(generateCall);
    expect(call).toMatchObject({ temperature: 0, tools: [{ type: 'function', name: 'add' }] });
    expect(abortSignal).toBeInstanceOf(AbortSignal);
  });

  it('streams tool call input and answers the calls parsed, with cached input tokens, as generate does', async () => {
    const turn = {
      text: 'Adding.',
      toolCalls: [
        { id: 'c1', name: 'add', input: '{"a":2,"b":3}' },
        { id: 'c2', name: 'add', input: '{"a":2,' },
      ],
      input: 20,
      cached: 5,
      output: 9,
    };
    const model = aiSdkModel(mockProvider([turn], 'mock-model', spec));
    const { parts, response } = await streamed(model);
    expect(parts).toEqual([
      { type: 'text', text: 'Adding.' },
      { type: 'tool-input-start', toolCallId: 'c1', toolName: 'add' },
      { type: 'tool-input', toolCallId: 'c1', delta: '{"a"' },
      { type: 'tool-input', toolCallId: 'c1', delta: ':2,"' },
      { type: 'tool-input', toolCallId: 'c1', delta: 'b":3' },
      { type: 'tool-input', toolCallId: 'c1', delta: '}' },
      { type: 'tool-input-start', toolCallId: 'c2', toolName: 'add' },
      { type: 'tool-input', toolCallId: 'c2', delta: '{"a"' },
      { type: 'tool-input', toolCallId: 'c2', delta: ':2,' },
    ]);
    const expected: ModelResponse = {
      message: { role: 'assistant', content: 'Adding.' },
      toolCalls: [
        { id: 'c1', name: 'add', args: { a: 2, b: 3 } },
        // Not JSON: kept raw, as generate keeps it, for the agent to answer as invalid arguments.
        { id: 'c2', name: 'add', args: '{"a":2,' },
      ],
      usage: { inputTokens: 20, outputTokens: 9, totalTokens: 29, cachedInputTokens: 5 },
      finishReason: 'tool-calls',
    };
    expect(response).toEqual(expected);
    expect(await model.generate(request())).toEqual(expected);
  });

  it('joins each text block in the order the blocks started, as generate answers their content', async () => {
    const chunks: LanguageModelV3StreamPart[] = [
      { type: 'text-start', id: 'a' },
      { type: 'text-start', id: 'b' },
      { type: 'text-delta', id: 'a', delta: 'One ' },
      { type: 'text-delta', id: 'b', delta: 'Two.' },
      { type: 'text-delta', id: 'a', delta: '' },
      { type: 'text-delta', id: 'a', delta: 'more. ' },
      { type: 'text-end', id: 'a' },
      { type: 'text-end', id: 'b' },
      finish,
    ];
    const result = generateResult({ input: 3, output: 1 });
    result.content = [
      { type: 'text', text: 'One more. ' },
      { type: 'text', text: 'Two.' },
    ];
    const model = aiSdkModel(mockModel(spec, { stream: chunks, generate: result }));
    const { parts, response } = await streamed(model);
    // An empty delta says nothing: it is not passed on.
    expect(parts).toEqual([
      { type: 'text', text: 'One ' },
      { type: 'text', text: 'Two.' },
      { type: 'text', text: 'more. ' },
    ]);
    expect(response.message.content).toBe('One more. Two.');
    expect(response).toEqual(await model.generate(request()));
  });

  it('shows a call sent whole as its start and input, and leaves out calls the provider runs', async () => {
    const chunks: LanguageModelV3StreamPart[] = [
      { type: 'tool-input-start', id: 'w1', toolName: 'web', providerExecuted: true },
      { type: 'tool-input-delta', id: 'w1', delta: '{"q":"rome"}' },
      {
        type: 'tool-call',
        toolCallId: 'w1',
        toolName: 'web',
        input: '{"q":"rome"}',
        providerExecuted: true,
      },
      { type: 'tool-result', toolCallId: 'w1', toolName: 'web', result: { hits: 3 } },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":1,"b":2}' },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'add', input: '' },
      finish,
    ];
    const model = aiSdkModel(mockModel(spec, { stream: chunks }));
    const { parts, response } = await streamed(model);
    expect(parts).toEqual([
      { type: 'tool-input-start', toolCallId: 'c1', toolName: 'add' },
      { type: 'tool-input', toolCallId: 'c1', delta: '{"a":1,"b":2}' },
      { type: 'tool-input-start', toolCallId: 'c2', toolName: 'add' },
    ]);
    expect(response.toolCalls).toEqual([
      { id: 'c1', name: 'add', args: { a: 1, b: 2 } },
      { id: 'c2', name: 'add', args: {} },
    ]);
  });

  it.each([
    [400, false],
    [503, true],
  ] as const)(
    'fails on an error part (HTTP %s) with the error generate throws for it',
    async (statusCode, retryable) => {
      const error = apiError(statusCode);
      const chunks: LanguageModelV3StreamPart[] = [
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'Hel' },
        { type: 'error', error },
        { type: 'text-delta', id: 't', delta: 'lo' },
        finish,
      ];
      const model = aiSdkModel(mockModel(spec, { stream: chunks, generate: error }));
      const parts: ModelStreamPart[] = [];
      const streamError = await model.stream!(request(), (part) => parts.push(part)).catch(
        (e: unknown) => e,
      );
      const generateError = await model.generate(request()).catch((e: unknown) => e);
      expect(generateError).toBeInstanceOf(CairnError);
      expect(streamError).toBeInstanceOf(CairnError);
      expect(streamError).toMatchObject({
        code: 'MODEL_FAILED',
        retryable,
        data: { provider: 'mock-provider', model: 'mock-model', statusCode },
        cause: error,
      });
      const { code, message, data } = generateError as CairnError;
      expect(streamError).toMatchObject({ code, message, retryable, data });
      expect(parts).toEqual([{ type: 'text', text: 'Hel' }]);
    },
  );

  it('fails with the message of a provider error object in an error part', async () => {
    const error = { type: 'overloaded_error', message: 'Overloaded' };
    const model = aiSdkModel(mockModel(spec, { stream: [{ type: 'error', error }] }));
    await expect(model.stream!(request(), () => {})).rejects.toThrow(
      'mock-provider model "mock-model" failed: Overloaded',
    );
  });

  it('fails retryable when the stream throws a retryable error mid-way, and not for any other', async () => {
    const failingMidWay = (error: unknown) => {
      const parts: LanguageModelV3StreamPart[] = [
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'Hel' },
      ];
      return failureOf(aiSdkModel(mockModel(spec, { stream: failingStream(parts, error) })));
    };
    const overloaded = await failingMidWay(apiError(529));
    expect(overloaded).toBeInstanceOf(CairnError);
    expect(overloaded).toMatchObject({
      code: 'MODEL_FAILED',
      retryable: true,
      data: { statusCode: 529, retryAfterMs: 1200 },
    });
    const cut = await failingMidWay(new TypeError('terminated'));
    expect(cut).toMatchObject({ code: 'MODEL_FAILED', retryable: false });
    expect((cut as Error).message).toContain('terminated');
  });

  it('fails retryable when the stream ends before its finish part', async () => {
    const chunks = streamParts({ text: 'It is' }).filter((part) => part.type !== 'finish');
    const error = await failureOf(aiSdkModel(mockModel(spec, { stream: chunks })));
    expect(error).toBeInstanceOf(CairnError);
    expect(error).toMatchObject({
      code: 'MODEL_FAILED',
      retryable: true,
      data: { provider: 'mock-provider', model: 'mock-model' },
    });
  });

  it('maps a doStream that throws as generate maps a doGenerate that throws', async () => {
    const error = apiError(429);
    const model = aiSdkModel(mockModel(spec, { stream: error, generate: error }));
    const streamError = await failureOf(model);
    const generateError = await model.generate(request()).catch((e: unknown) => e);
    expect(streamError).toMatchObject({ code: 'MODEL_FAILED', retryable: true });
    const { message, data } = generateError as CairnError;
    expect(streamError).toMatchObject({ message, data });
  });

  it('stops reading on abort: the stream is cancelled and no part follows', async () => {
    const controller = new AbortController();
    const reason = new Error('lease lost');
    let cancelled: unknown;
    let more: () => void = () => {};
    const pending = new Promise<void>((resolve) => (more = resolve));
    let pulls = 0;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      async pull(stream) {
        pulls += 1;
        if (pulls === 1) return stream.enqueue({ type: 'text-delta', id: 't', delta: 'Hel' });
        // The provider is slow to say more; when it does, nobody listens any longer.
        await pending;
        stream.enqueue({ type: 'text-delta', id: 't', delta: 'lo' });
      },
      cancel(why) {
        cancelled = why;
      },
    });
    const languageModel = mockModel(spec, { stream });
    const parts: ModelStreamPart[] = [];
    const answer = aiSdkModel(languageModel).stream!(request(controller.signal), (part) => {
      parts.push(part);
      if (parts.length === 1) queueMicrotask(() => controller.abort(reason));
    });
    await expect(answer).rejects.toBe(reason);
    more();
    await new Promise((resolve) => setImmediate(resolve));
    expect(parts).toEqual([{ type: 'text', text: 'Hel' }]);
    expect(cancelled).toBe(reason);
    expect(languageModel.doStreamCalls[0]!.abortSignal).toBe(controller.signal);
  });

  it('lets what the provider throws on an abort through as it is, as generate does', async () => {
    const controller = new AbortController();
    const aborted = new DOMException('This operation was aborted', 'AbortError');
    // As a provider's response body does: its stream fails once the call's signal aborts.
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(stream) {
        controller.signal.addEventListener('abort', () => stream.error(aborted));
        stream.enqueue({ type: 'text-delta', id: 't', delta: 'Hel' });
      },
    });
    const answer = aiSdkModel(mockModel(spec, { stream })).stream!(request(controller.signal), () =>
      controller.abort(new Error('cancelled')),
    );
    await expect(answer).rejects.toBe(aborted);
  });

  it('stops at once when the call was aborted before its stream was read', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled');
    // A provider that has said nothing yet, and does not end its stream on the abort: only a cancel ends it.
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start() {
        controller.abort(reason);
      },
    });
    const answer = aiSdkModel(mockModel(spec, { stream })).stream!(
      request(controller.signal),
      () => {},
    );
    await expect(answer).rejects.toBe(reason);
  }, 2_000);

  it('reads nothing after the finish part', async () => {
    let cancelled = false;
    const chunks: LanguageModelV3StreamPart[] = [
      { type: 'text-delta', id: 't', delta: 'Done.' },
      finish,
      { type: 'text-delta', id: 't', delta: ' More.' },
    ];
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      pull(controller) {
        controller.enqueue(chunks.shift()!);
      },
      cancel() {
        cancelled = true;
      },
    });
    const model = aiSdkModel(mockModel(spec, { stream }));
    const { parts, response } = await streamed(model);
    expect(parts).toEqual([{ type: 'text', text: 'Done.' }]);
    expect(response.message.content).toBe('Done.');
    expect(cancelled).toBe(true);
  });
});

describe('a model without doStream', () => {
  it('makes a model without stream', () => {
    const languageModel: LanguageModelV4Compatible = {
      specificationVersion: 'v4',
      provider: 'p',
      modelId: 'm',
      doGenerate: async () => generateResult({ text: 'hi' }),
    };
    const model = aiSdkModel(languageModel);
    expect(model.stream).toBeUndefined();
  });
});
