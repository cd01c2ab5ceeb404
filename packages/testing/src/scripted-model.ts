import {
  CairnError,
  type JsonValue,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamPart,
  type ToolCall,
  type Usage,
} from '@cairn/sdk';

/** One scripted answer: text, tool calls, usage, or an error to throw instead. */
export interface ScriptedTurn {
  text?: string;
  toolCalls?: Array<{ id?: string; name: string; args: JsonValue }>;
  usage?: Partial<Usage>;
  /** Thrown instead of answering; a `CairnError` with `retryable: true` is retried by the runtime. */
  error?: Error;
}

/** A turn, or a function choosing one from the request and the turn index. */
export type Script =
  readonly ScriptedTurn[] | ((request: ModelRequest, turn: number) => ScriptedTurn);

/** A scripted model, with what it was asked. */
export interface ScriptedModel extends Model {
  /** Every request, in order, as it was sent (copied); empty when `recordCalls` is false. */
  readonly calls: ModelRequest[];
  /** Answers with tool calls of JSON arguments, as a provider does: they fit a conversation as they are. */
  generate(request: ModelRequest): Promise<ModelResponse & { toolCalls: ToolCall[] }>;
}

/** Options of `scriptedModel`. */
export interface ScriptedModelOptions {
  /** @defaultValue 'scripted' */
  name?: string;
  /** @defaultValue 'cairn-testing' */
  provider?: string;
  /** Usage reported by turns that give none. @defaultValue 100 input and 20 output tokens */
  usage?: Usage;
  /**
   * Keep a copy of every request in `calls`. A load test with long conversations turns it off: copying each
   * request costs more than the rest of a trip. @defaultValue true
   */
  recordCalls?: boolean;
  /**
   * Stream answers: each turn's text in pieces of this many characters, then each tool call's input whole.
   * Unset: the model has no `stream`, as a provider adapter that cannot stream.
   */
  streamPieces?: number;
  /**
   * Awaited before each streamed piece of text (`index` from 0): where a test holds a call mid-stream, or
   * crashes it there.
   */
  onPiece?(piece: {
    turn: number;
    index: number;
    text: string;
    signal: AbortSignal;
  }): void | Promise<void>;
}

const defaultUsage: Usage = { inputTokens: 100, outputTokens: 20, totalTokens: 120 };

/**
 * A deterministic fake model. Turn `n` is the one answering a conversation that already holds `n`
 * assistant messages, so a request repeated after a crash gets the same answer as the first time.
 */
export function scriptedModel(script: Script, options: ScriptedModelOptions = {}): ScriptedModel {
  const calls: ModelRequest[] = [];
  const baseUsage = options.usage ?? defaultUsage;
  const model: ScriptedModel = {
    name: options.name ?? 'scripted',
    provider: options.provider ?? 'cairn-testing',
    calls,
    async generate(request) {
      if (options.recordCalls !== false) {
        const { signal, ...rest } = request;
        calls.push({ ...structuredClone(rest), signal });
      }
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      const scripted = typeof script === 'function' ? script(request, turn) : script[turn];
      if (scripted === undefined) {
        throw new CairnError('MODEL_FAILED', `The scripted model has no turn ${turn}.`);
      }
      if (scripted.error !== undefined) throw scripted.error;
      const usage = { ...baseUsage, ...scripted.usage };
      if (scripted.usage?.totalTokens === undefined)
        usage.totalTokens = usage.inputTokens + usage.outputTokens;
      const toolCalls: ToolCall[] = (scripted.toolCalls ?? []).map((call, index) => ({
        id: call.id ?? `call_${turn}_${index}`,
        name: call.name,
        args: call.args,
      }));
      return { message: { role: 'assistant', content: scripted.text ?? '' }, toolCalls, usage };
    },
  };
  const pieceSize = options.streamPieces;
  if (pieceSize === undefined) return model;
  return {
    ...model,
    async stream(request, onPart: (part: ModelStreamPart) => void) {
      const response = await model.generate(request);
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      const text = response.message.content;
      for (let index = 0; index * pieceSize < text.length; index += 1) {
        const piece = text.slice(index * pieceSize, (index + 1) * pieceSize);
        // No await without a hook: a piece then costs what a provider's delta costs the runtime, nothing more.
        if (options.onPiece !== undefined) {
          await options.onPiece({ turn, index, text: piece, signal: request.signal });
        }
        request.signal.throwIfAborted();
        onPart({ type: 'text', text: piece });
      }
      for (const call of response.toolCalls) {
        onPart({ type: 'tool-input-start', toolCallId: call.id, toolName: call.name });
        onPart({ type: 'tool-input', toolCallId: call.id, delta: JSON.stringify(call.args) });
      }
      return response;
    },
  };
}
