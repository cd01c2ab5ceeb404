import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import {
  CairnError,
  systemClock,
  type Clock,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamPart,
} from '@cairn/sdk';
import { toCairnError } from './provider-error.js';
import { toPrompt, toTools } from './prompt.js';
import { fromResult } from './response.js';
import { readStream } from './stream-response.js';

/** Call settings the adapter passes through unchanged; it sets the prompt, tools, format and signal itself. */
export type AiSdkCallSettings = Omit<
  LanguageModelV3CallOptions,
  'prompt' | 'tools' | 'toolChoice' | 'responseFormat' | 'abortSignal'
>;

/** Options of `aiSdkModel`. */
export interface AiSdkModelOptions {
  /** Sent with every call: `temperature`, `maxOutputTokens`, `headers`, `providerOptions` and the like. */
  settings?: AiSdkCallSettings;
  /**
   * The longest wait a provider's `retry-after` may ask for before a retry; longer asks are cut to it.
   * @defaultValue 60000
   */
  maxRetryAfterMs?: number;
  /** Reads the time for a `retry-after` given as an HTTP date. @defaultValue systemClock */
  clock?: Pick<Clock, 'now'>;
}

/**
 * An AI SDK language model of specification v4 (AI SDK 7 providers, `@ai-sdk/provider` 4), as far as the
 * adapter relies on it without depending on `@ai-sdk/provider` 4: the call options the adapter sends (text,
 * tool calls and JSON tool results) and the result and stream parts it reads are the same in v3 and v4.
 */
export interface LanguageModelV4Compatible {
  readonly specificationVersion: 'v4';
  readonly provider: string;
  readonly modelId: string;
  readonly doGenerate: (options: never) => PromiseLike<unknown>;
  /** Every v4 model has it; without it the Cairn model does not stream. */
  readonly doStream?: (options: never) => PromiseLike<unknown>;
}

type ProviderCall = (options: LanguageModelV3CallOptions) => PromiseLike<unknown>;

/** A language model `aiSdkModel` accepts: specification v3 (AI SDK 6) or v4 (AI SDK 7). */
export type AiSdkLanguageModel = LanguageModelV3 | LanguageModelV4Compatible;

/**
 * Makes a Cairn `Model` of an AI SDK language model: specification v3 (as `@ai-sdk/openai` 3.x,
 * `@ai-sdk/anthropic` 3.x and the other providers for AI SDK 6 implement it) or v4 (their 4.x lines, for
 * AI SDK 7). Its `name` is the model id and its `provider` the provider id, both part of an agent's
 * signature. It streams through the provider's `doStream`, with the same answer `doGenerate` gives.
 * Provider errors become `MODEL_FAILED` Cairn errors, retryable for rate limits and overload with the
 * provider's retry-after.
 */
export function aiSdkModel(
  languageModel: AiSdkLanguageModel,
  options: AiSdkModelOptions = {},
): Model {
  const version: unknown = (languageModel as { specificationVersion?: unknown })
    .specificationVersion;
  if (version !== 'v3' && version !== 'v4') {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `@cairn/ai-sdk needs a language model of specification v3 (AI SDK 6 providers) or v4 (AI SDK 7 providers), got ${JSON.stringify(version)}.`,
    );
  }
  const clock = options.clock ?? systemClock;
  const errorContext = {
    provider: languageModel.provider,
    model: languageModel.modelId,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
    now: () => clock.now(),
  };

  function callOf(request: ModelRequest): LanguageModelV3CallOptions {
    const call: LanguageModelV3CallOptions = {
      ...options.settings,
      prompt: toPrompt(request.messages),
      abortSignal: request.signal,
    };
    if (request.tools.length > 0) call.tools = toTools(request.tools);
    if (request.responseSchema !== undefined) {
      call.responseFormat = { type: 'json', schema: request.responseSchema };
    }
    return call;
  }

  /** Makes a provider call; what it throws becomes a Cairn error, unless the run aborted it. */
  async function callProvider(method: ProviderCall, request: ModelRequest): Promise<unknown> {
    try {
      return await method.call(languageModel, callOf(request));
    } catch (error) {
      // A run that is cancelled or lost its lease aborts the call; the runtime knows why, so pass it on.
      if (request.signal.aborted) throw error;
      throw toCairnError(error, errorContext);
    }
  }

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    // A v4 result holds the same text and tool-call parts, usage and finish reason as a v3 one; the part
    // types v4 adds are not read.
    const doGenerate = languageModel.doGenerate as ProviderCall;
    return fromResult((await callProvider(doGenerate, request)) as LanguageModelV3GenerateResult);
  }

  const model: Model = { name: languageModel.modelId, provider: languageModel.provider, generate };
  const doStream = languageModel.doStream as ProviderCall | undefined;
  if (typeof doStream !== 'function') return model;
  model.stream = async (request: ModelRequest, onPart: (part: ModelStreamPart) => void) => {
    // v4 streams the same text, reasoning, tool-input, tool-call and finish parts as v3, and more that
    // are passed over.
    const { stream } = (await callProvider(doStream, request)) as LanguageModelV3StreamResult;
    return readStream(stream, { signal: request.signal, onPart, errorContext });
  };
  return model;
}
