import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
} from '@ai-sdk/provider';
import type { LanguageModelV4GenerateResult } from '@ai-sdk/provider-v4';
import { MockLanguageModelV3 } from 'ai/test';
import { MockLanguageModelV4 } from 'ai-v7/test';

/** The AI SDK language model specifications the adapter accepts: v3 (AI SDK 6) and v4 (AI SDK 7). */
export const specs = ['v3', 'v4'] as const;
export type Spec = (typeof specs)[number];

/** One answer of the mock provider. */
export interface Turn {
  text?: string;
  /** Tool calls with their JSON-encoded input, as a provider sends them. */
  toolCalls?: Array<{ id: string; name: string; input: string }>;
  input?: number;
  cached?: number;
  output?: number;
}

/** The trip a call belongs to: how many assistant messages its prompt already holds. */
export function tripOf(options: LanguageModelV3CallOptions): number {
  return options.prompt.filter((message) => message.role === 'assistant').length;
}

export function generateResult(turn: Turn): LanguageModelV3GenerateResult {
  const content: LanguageModelV3Content[] = [];
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
    doGenerate: async (options) => {
      const turn = turns[tripOf(options)];
      if (turn === undefined) throw new Error(`no scripted turn ${tripOf(options)}`);
      return generateResult(turn);
    },
  });
}

/** `mockProvider` on AI SDK 7's mock: a language model of specification v4. */
export function mockProviderV4(turns: readonly Turn[], modelId = 'mock-model') {
  return new MockLanguageModelV4({
    provider: 'mock-provider',
    modelId,
    doGenerate: async (options) => {
      const trip = options.prompt.filter((message) => message.role === 'assistant').length;
      const turn = turns[trip];
      if (turn === undefined) throw new Error(`no scripted turn ${trip}`);
      // A v3 result of text, tool calls and usage is a v4 result too.
      return generateResult(turn) as LanguageModelV4GenerateResult;
    },
  });
}
