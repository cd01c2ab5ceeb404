import type { StreamChunk, ToolOutcomePart } from '@cairn/sdk';
import type { SupersededData, UIMessageChunk } from './ui-parts.js';

type OpenPart = { kind: 'text' | 'reasoning'; id: string };

/**
 * Turns a run's stream chunks, in position order, into UI message chunks. Each unit's text and reasoning
 * become parts with ids of their own; a part ends when its unit says something of another kind or another
 * unit speaks; a `superseded` marker ends its unit's parts and becomes a `data-cairn-superseded` part naming
 * what the client drops. Resuming: chunks up to the reader's last position are taken in without output, then
 * `resume` re-sends the start of every part still open, so the client's state machine stays valid.
 */
export class UIMessageMapper {
  private readonly open = new Map<string, OpenPart>();
  private readonly shown = new Map<
    string,
    { partIds: string[]; toolCallIds: string[]; positions: number[] }
  >();
  private parts = 0;
  /**
   * Tool calls whose input started (and was not superseded), by id: their deltas are passed on, and kept until
   * their unit is done, when the whole input is made available.
   */
  private readonly tools = new Map<string, { unit: string; toolName: string; input: string }>();
  /** The unit that spoke last: its tool calls may still get input. */
  private lastUnit: string | undefined;
  /** The tool calls the client has a part for (started, not superseded): only those get an outcome. */
  private readonly calls = new Set<string>();

  /** The UI chunks of one stream chunk. */
  map(chunk: StreamChunk): UIMessageChunk[] {
    const { unit, part, position } = chunk;
    const out: UIMessageChunk[] = [];
    if (part.type === 'superseded') {
      const shown = this.shown.get(unit);
      // A unit that said nothing yet (a trip after a wait, whose attempt marks every unit it streams) leaves
      // nothing to drop: no part for the client to keep.
      if (shown === undefined || shown.positions.length === 0) return out;
      out.push(...this.end(unit));
      this.shown.delete(unit);
      for (const [id, tool] of this.tools) if (tool.unit === unit) this.tools.delete(id);
      for (const id of shown.toolCallIds) this.calls.delete(id);
      const data: SupersededData = { unit, ...shown };
      out.push({ type: 'data-cairn-superseded', id: `superseded-${position}`, data });
      return out;
    }
    // An encoded part (a store read without its payload codec) says nothing a chat can show: give the codec to
    // the store this reads from (`protectPayloads`) to stream what it says.
    if (part.type === 'sealed') return out;
    // A tool call's input with no start (one the runtime dropped) would break the client's state machine.
    if (part.type === 'tool-input' && !this.tools.has(part.toolCallId)) return out;
    // Nor would the outcome of a call it has no part for (one whose id the runtime changed, or superseded).
    if (part.type === 'tool-outcome' && !this.calls.has(part.toolCallId)) return out;
    const shown = this.shownOf(unit);
    // Units speak one at a time: another unit's open part ends here, and the unit that spoke last is done (its
    // model call settled): its tool calls' input is whole.
    for (const other of [...this.open.keys()]) if (other !== unit) out.push(...this.end(other));
    if (this.lastUnit !== undefined && this.lastUnit !== unit)
      out.push(...this.inputs(this.lastUnit));
    this.lastUnit = unit;
    shown.positions.push(position);
    if (part.type === 'text' || part.type === 'reasoning') {
      let open = this.open.get(unit);
      if (open?.kind !== part.type) {
        out.push(...this.end(unit));
        open = { kind: part.type, id: `${unit}#${(this.parts += 1)}` };
        this.open.set(unit, open);
        shown.partIds.push(open.id);
        out.push(partStart(open));
      }
      out.push({ type: `${part.type}-delta`, id: open.id, delta: part.text });
      return out;
    }
    out.push(...this.end(unit));
    if (part.type === 'tool-outcome') {
      out.push(...this.inputs(undefined, part.toolCallId), toolOutcome(part));
    } else if (part.type === 'tool-input-start') {
      this.calls.add(part.toolCallId);
      shown.toolCallIds.push(part.toolCallId);
      this.tools.set(part.toolCallId, { unit, toolName: part.toolName, input: '' });
      out.push(toolStart(part.toolCallId, part.toolName));
    } else {
      this.tools.get(part.toolCallId)!.input += part.delta;
      out.push({
        type: 'tool-input-delta',
        toolCallId: part.toolCallId,
        inputTextDelta: part.delta,
      });
    }
    return out;
  }

  /**
   * The starts of the parts open now, and of the tool calls of the unit that spoke last (whose input may still
   * come): what a reader resuming mid-part is sent first. A tool call's start again updates its part in place.
   */
  resume(): UIMessageChunk[] {
    const tools = [...this.tools]
      .filter(([, tool]) => tool.unit === this.lastUnit)
      .map(([toolCallId, { toolName }]) => toolStart(toolCallId, toolName));
    return [...tools, ...[...this.open.values()].map(partStart)];
  }

  /** Ends every open part, and makes the input of the last unit's tool calls available: the stream ends. */
  finish(): UIMessageChunk[] {
    const ends = [...this.open.keys()].flatMap((unit) => this.end(unit));
    return this.lastUnit === undefined ? ends : [...ends, ...this.inputs(this.lastUnit)];
  }

  /**
   * The whole input of each tool call of a unit that is done, as `tool-input-available` (or `tool-input-error`
   * for an input that is not JSON, which the run answers as invalid arguments); each call is then forgotten.
   */
  private inputs(unit: string | undefined, only?: string): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    for (const [toolCallId, tool] of this.tools) {
      if (only === undefined ? tool.unit !== unit : toolCallId !== only) continue;
      this.tools.delete(toolCallId);
      const call = { toolCallId, toolName: tool.toolName, providerExecuted: true };
      try {
        out.push({
          type: 'tool-input-available',
          ...call,
          input: JSON.parse(tool.input === '' ? '{}' : tool.input) as unknown,
        });
      } catch {
        out.push({
          type: 'tool-input-error',
          ...call,
          input: tool.input,
          errorText:
            'The model’s input for this call is not JSON: the call is refused and the model told.',
        });
      }
    }
    return out;
  }

  private end(unit: string): UIMessageChunk[] {
    const open = this.open.get(unit);
    if (open === undefined) return [];
    this.open.delete(unit);
    return [{ type: `${open.kind}-end`, id: open.id }];
  }

  private shownOf(unit: string) {
    let shown = this.shown.get(unit);
    if (shown === undefined) {
      shown = { partIds: [], toolCallIds: [], positions: [] };
      this.shown.set(unit, shown);
    }
    return shown;
  }
}

/**
 * A tool call's start. `providerExecuted`: the run's worker makes the call, not the page (`useChat` calls no
 * `onToolCall` for it, and sends nothing back on its own).
 */
function toolStart(toolCallId: string, toolName: string): UIMessageChunk {
  return { type: 'tool-input-start', toolCallId, toolName, providerExecuted: true };
}

/**
 * How a call the worker made settled: its output, or its error (an outcome the run cannot know is an error whose
 * text says so, as the model is told).
 */
function toolOutcome(part: ToolOutcomePart): UIMessageChunk {
  const { toolCallId } = part;
  if (part.outcome !== 'ok') {
    return {
      type: 'tool-output-error',
      toolCallId,
      errorText: part.errorText ?? `The call ended with an ${part.outcome} outcome.`,
      providerExecuted: true,
    };
  }
  const output = part.truncated === true ? truncatedOutput : (part.output ?? null);
  return { type: 'tool-output-available', toolCallId, output, providerExecuted: true };
}

/** The output shown for one too long to stream. */
const truncatedOutput = {
  truncated: true,
  note: 'The output is too long to stream: the run’s history and final messages keep it.',
};

/**
 * A part's start, its id kept in the part's `providerMetadata` (the AI SDK keeps it on the message's part), so a
 * client can tell which parts a `data-cairn-superseded` part names.
 */
function partStart({ kind, id }: OpenPart): UIMessageChunk {
  return { type: `${kind}-start`, id, providerMetadata: { cairn: { partId: id } } };
}

/** Options of `uiMessageStreamResponse`. */
export interface UIMessageStreamOptions {
  /**
   * The last position the reader saw: its `Last-Event-ID` (taken from `request` when not given). Chunks up to
   * it are not sent again. @defaultValue none: from the first
   */
  lastEventId?: string | null;
  /** The request being answered: its `Last-Event-ID` header is honoured, and its abort stops reading. */
  request?: Request;
  /** The assistant message's id in the `start` chunk (the run's id is a good one). */
  messageId?: string;
  /** More response headers. */
  headers?: Record<string, string>;
}

/**
 * A `Response` streaming a run to `useChat` as the AI SDK's UI message stream over server-sent events: `read`
 * gives the run's chunks from a position on, stopping when its signal aborts (the reader went away):
 * `(after, signal) => client.stream(runId, { after, signal })`. Each event's `id`
 * is the stream position, so a browser's reconnect (or `useChat`'s resume) continues where it was. It ends
 * with `finish` when the run ends or waits.
 */
export function uiMessageStreamResponse(
  read: (after: number, signal: AbortSignal) => AsyncIterable<StreamChunk>,
  options: UIMessageStreamOptions = {},
): Response {
  const raw = options.lastEventId ?? options.request?.headers.get('last-event-id') ?? null;
  const after = raw !== null && /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : 0;
  const encoder = new TextEncoder();
  const event = (chunk: UIMessageChunk | '[DONE]', id?: number) =>
    encoder.encode(
      `${id === undefined ? '' : `id: ${id}\n`}data: ${chunk === '[DONE]' ? chunk : JSON.stringify(chunk)}\n\n`,
    );
  const stop = new AbortController();
  options.request?.signal.addEventListener('abort', () => stop.abort(), { once: true });
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      const mapper = new UIMessageMapper();
      const send = (chunks: UIMessageChunk[], id?: number) =>
        chunks.forEach((chunk, i) =>
          controller.enqueue(event(chunk, i === chunks.length - 1 ? id : undefined)),
        );
      send([
        {
          type: 'start',
          ...(options.messageId === undefined ? {} : { messageId: options.messageId }),
        },
      ]);
      try {
        // From the first chunk, so a reader resuming mid-part gets that part's start again.
        let resumed = after === 0;
        for await (const chunk of read(0, stop.signal)) {
          if (stop.signal.aborted) break;
          if (chunk.position > after && !resumed) {
            resumed = true;
            send(mapper.resume());
          }
          const mapped = mapper.map(chunk);
          if (chunk.position > after) send(mapped, chunk.position);
        }
        // Nothing came after the reader's position: the parts it has open are started again, so their ends fit.
        if (!resumed) send(mapper.resume());
        send([...mapper.finish(), { type: 'finish' }]);
        controller.enqueue(event('[DONE]'));
      } catch (error) {
        send([
          { type: 'error', errorText: error instanceof Error ? error.message : String(error) },
        ]);
      } finally {
        controller.close();
      }
    },
    cancel() {
      stop.abort();
    },
  });
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-vercel-ai-ui-message-stream': 'v1',
      // Proxies that buffer (nginx) would hold the tokens back.
      'x-accel-buffering': 'no',
      ...options.headers,
    },
  });
}
