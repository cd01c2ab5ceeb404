import type {
  LanguageModelV3FinishReason,
  LanguageModelV3StreamPart,
  LanguageModelV3ToolCall,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { ModelResponse, ModelStreamPart } from '@cairn/sdk';
import { streamCutShort, toCairnError, type ErrorContext } from './provider-error.js';
import { responseOf } from './response.js';

/** What `readStream` reads a provider's stream with. */
export interface StreamReading {
  /** Stops the reading: the stream is cancelled; it fails with the reason (or what the provider threw). */
  signal: AbortSignal;
  onPart: (part: ModelStreamPart) => void;
  errorContext: ErrorContext;
}

/**
 * Reads a provider's `doStream` stream (specification v3, or v4 whose parts v3 does not have are passed over)
 * to its `finish` part: text, reasoning and the input of the client's tool calls go to `onPart` one delta each
 * as they arrive, and the answer is the response `doGenerate` would have given for the same output. An `error`
 * part, a stream that fails or one that ends without `finish` fails it as a provider error; nothing reaches
 * `onPart` once it settled, and the stream is cancelled once it is no longer read.
 */
export async function readStream(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  reading: StreamReading,
): Promise<ModelResponse> {
  const { signal, errorContext } = reading;
  const reader = stream.getReader();
  const answer = new StreamedAnswer(reading.onPart);
  // Cancelling ends a pending read at once (done), whatever the provider does with the abort.
  const stop = () => void reader.cancel(signal.reason).catch(() => {});
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  const read = async () => {
    try {
      return await reader.read();
    } catch (error) {
      // As `generate` does: a run that is cancelled or lost its lease gets what the provider threw.
      throw signal.aborted ? error : toCairnError(error, errorContext);
    }
  };
  try {
    for (;;) {
      const next = await read();
      // A part read before the abort was seen is not passed on: the caller stopped listening.
      if (signal.aborted) throw signal.reason;
      if (next.done) throw streamCutShort(errorContext);
      const part = next.value;
      if (part.type === 'error') throw toCairnError(part.error, errorContext);
      if (part.type === 'finish') return answer.finish(part.usage, part.finishReason);
      answer.take(part);
    }
  } finally {
    signal.removeEventListener('abort', stop);
    // After `finish` or a failure nothing more is read; a stream already at its end ignores this.
    void reader.cancel().catch(() => {});
  }
}

/**
 * An answer put together from its stream parts as the AI SDK puts one together: each text block's deltas
 * joined, the blocks in the order they started; the tool calls in the order of their `tool-call` parts.
 */
class StreamedAnswer {
  private readonly texts: Array<{ text: string }> = [];
  /** The text block each id last started. */
  private readonly openTexts = new Map<string, { text: string }>();
  private readonly toolCalls: LanguageModelV3ToolCall[] = [];
  /** The client's tool calls whose start was reported, by id. */
  private readonly announced = new Set<string>();

  constructor(private readonly onPart: (part: ModelStreamPart) => void) {}

  take(part: LanguageModelV3StreamPart): void {
    switch (part.type) {
      case 'text-start':
        this.startText(part.id);
        return;
      case 'text-delta':
        (this.openTexts.get(part.id) ?? this.startText(part.id)).text += part.delta;
        if (part.delta !== '') this.onPart({ type: 'text', text: part.delta });
        return;
      case 'reasoning-delta':
        if (part.delta !== '') this.onPart({ type: 'reasoning', text: part.delta });
        return;
      case 'tool-input-start':
        // A call the provider runs itself is not the client's: the answer leaves it out, so does the stream.
        if (part.providerExecuted !== true) this.announce(part.id, part.toolName);
        return;
      case 'tool-input-delta':
        if (this.announced.has(part.id) && part.delta !== '') {
          this.onPart({ type: 'tool-input', toolCallId: part.id, delta: part.delta });
        }
        return;
      case 'tool-call':
        this.toolCalls.push(part);
        // A call sent whole, without its input first, is still shown to whoever watches: its input in one.
        if (part.providerExecuted !== true && !this.announced.has(part.toolCallId)) {
          this.announce(part.toolCallId, part.toolName);
          if (part.input !== '') {
            this.onPart({ type: 'tool-input', toolCallId: part.toolCallId, delta: part.input });
          }
        }
        return;
      default:
        // Metadata, blocks' bounds, sources, files, results of provider-run tools: no part of the answer.
        return;
    }
  }

  finish(
    usage: LanguageModelV3Usage,
    finishReason: LanguageModelV3FinishReason | string | undefined,
  ): ModelResponse {
    const text = this.texts.map((block) => block.text).join('');
    return responseOf({ text, toolCalls: this.toolCalls, usage, finishReason });
  }

  private startText(id: string): { text: string } {
    const block = { text: '' };
    this.texts.push(block);
    this.openTexts.set(id, block);
    return block;
  }

  /** Reports a tool call's start, once. */
  private announce(toolCallId: string, toolName: string): void {
    if (this.announced.has(toolCallId)) return;
    this.announced.add(toolCallId);
    this.onPart({ type: 'tool-input-start', toolCallId, toolName });
  }
}
