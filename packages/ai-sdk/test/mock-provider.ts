import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
} from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';

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
export function mockProvider(turns: readonly Turn[], modelId = 'mock-model') {
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
