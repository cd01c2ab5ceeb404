import type {
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import type { LanguageModelV4GenerateResult, LanguageModelV4StreamPart } from '@ai-sdk/provider-v4';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { simulateReadableStream as simulateReadableStreamV7 } from 'ai-v7';
import { MockLanguageModelV4 } from 'ai-v7/test';

/** The AI SDK language model specifications the adapter accepts: v3 (AI SDK 6) and v4 (AI SDK 7). */
export const specs = ['v3', 'v4'] as const;
export type Spec = (typeof specs)[number];

/** One answer of the mock provider. */
export interface Turn {
  reasoning?: string;
  text?: string;
  /** Tool calls with their JSON-encoded input, as a provider sends them. */
  toolCalls?: Array<{ id: string; name: string; input: string }>;
  input?: number;
  cached?: number;
  output?: number;
}

/** The trip a call belongs to: how many assistant messages its prompt already holds. */
export function tripOf(options: { prompt: ReadonlyArray<{ role: string }> }): number {
  return options.prompt.filter((message) => message.role === 'assistant').length;
}

function turnOf(
  turns: readonly Turn[],
  options: { prompt: ReadonlyArray<{ role: string }> },
): Turn {
  const turn = turns[tripOf(options)];
  if (turn === undefined) throw new Error(`no scripted turn ${tripOf(options)}`);
  return turn;
}

export function generateResult(turn: Turn): LanguageModelV3GenerateResult {
  const content: LanguageModelV3Content[] = [];
  if (turn.reasoning !== undefined) content.push({ type: 'reasoning', text: turn.reasoning });
  if (turn.text !== undefined) content.push({ type: 'text', text: turn.text });
  for (const call of turn.toolCalls ?? []) {
    content.push({
      type: 'tool-call',
      toolCallId: call.id,
      toolName: call.name,
      input: call.input,
    });
  }
  const cached = turn.cached;
  return {
    content,
    finishReason: {
      unified: (turn.toolCalls?.length ?? 0) > 0 ? 'tool-calls' : 'stop',
      raw: undefined,
    },
    usage: {
      inputTokens: {
        total: turn.input ?? 10,
        noCache: cached === undefined ? undefined : (turn.input ?? 10) - cached,
        cacheRead: cached,
        cacheWrite: undefined,
      },
      outputTokens: { total: turn.output ?? 1, text: undefined, reasoning: undefined },
    },
    warnings: [],
  };
}

/** The deltas a provider streams a text in: a word each, with the white space after it. */
export function wordsOf(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/**
 * What a provider streams for the answer `generateResult` gives whole: text and reasoning a word a delta,
 * each tool call's input in pieces of four characters before its `tool-call`, then `finish`.
 */
export function streamParts(turn: Turn): LanguageModelV3StreamPart[] {
  const { usage, finishReason } = generateResult(turn);
  const parts: LanguageModelV3StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: 'resp-1', modelId: 'mock-model' },
  ];
  if (turn.reasoning !== undefined) {
    parts.push({ type: 'reasoning-start', id: 'r' });
    for (const delta of wordsOf(turn.reasoning))
      parts.push({ type: 'reasoning-delta', id: 'r', delta });
    parts.push({ type: 'reasoning-end', id: 'r' });
  }
  if (turn.text !== undefined) {
    parts.push({ type: 'text-start', id: 't' });
    for (const delta of wordsOf(turn.text)) parts.push({ type: 'text-delta', id: 't', delta });
    parts.push({ type: 'text-end', id: 't' });
  }
  for (const call of turn.toolCalls ?? []) {
    parts.push({ type: 'tool-input-start', id: call.id, toolName: call.name });
    for (const delta of call.input.match(/[\s\S]{1,4}/g) ?? []) {
      parts.push({ type: 'tool-input-delta', id: call.id, delta });
    }
    parts.push({ type: 'tool-input-end', id: call.id });
    parts.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.input });
  }
  parts.push({ type: 'finish', usage, finishReason });
  return parts;
}

/**
 * The AI SDK's mock model answering by trip, not by call count: a call made again after a crash gets the
 * same answer, as a real model given the same conversation would give an equivalent one.
 */
export function mockProvider(turns: readonly Turn[], modelId = 'mock-model', spec: Spec = 'v3') {
  // The v4 mock records calls and is overridden as the v3 one is; typed as v3 so tests use either alike.
  if (spec === 'v4') return mockProviderV4(turns, modelId) as unknown as MockLanguageModelV3;
  return new MockLanguageModelV3({
    provider: 'mock-provider',
    modelId,
    doGenerate: async (options) => generateResult(turnOf(turns, options)),
    doStream: async (options) => ({
      stream: simulateReadableStream({ chunks: streamParts(turnOf(turns, options)) }),
    }),
  });
}

/** `mockProvider` on AI SDK 7's mock: a language model of specification v4. */
export function mockProviderV4(turns: readonly Turn[], modelId = 'mock-model') {
  return new MockLanguageModelV4({
    provider: 'mock-provider',
    modelId,
    // A v3 result of text, tool calls and usage is a v4 result too, and so are these v3 stream parts.
    doGenerate: async (options) =>
      generateResult(turnOf(turns, options)) as LanguageModelV4GenerateResult,
    doStream: async (options) => ({
      stream: simulateReadableStreamV7({
        chunks: streamParts(turnOf(turns, options)) as LanguageModelV4StreamPart[],
      }),
    }),
  });
}

/** What `mockModel` answers; an `Error` is thrown instead. */
export interface MockAnswers {
  /** Stream parts (given one a read, as `simulateReadableStream` gives them) or a stream of them. */
  stream: LanguageModelV3StreamPart[] | ReadableStream<LanguageModelV3StreamPart> | Error;
  /** @defaultValue an answer of no text */
  generate?: LanguageModelV3GenerateResult | Error;
}

/** The AI SDK's mock of `spec` answering `answers`, typed as v3 so tests use either alike. */
export function mockModel(spec: Spec, answers: MockAnswers): MockLanguageModelV3 {
  const simulate = spec === 'v3' ? simulateReadableStream : simulateReadableStreamV7;
  const { stream, generate = generateResult({}) } = answers;
  const settings = {
    provider: 'mock-provider',
    modelId: 'mock-model',
    doGenerate: async () => {
      if (generate instanceof Error) throw generate;
      return generate;
    },
    doStream: async () => {
      if (stream instanceof Error) throw stream;
      return { stream: Array.isArray(stream) ? simulate({ chunks: stream }) : stream };
    },
  };
  if (spec === 'v3') return new MockLanguageModelV3(settings);
  return new MockLanguageModelV4(settings as never) as unknown as MockLanguageModelV3;
}
