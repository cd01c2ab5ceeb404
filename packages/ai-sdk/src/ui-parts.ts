/**
 * What a browser needs of a Cairn UI message stream: the chunk and data-part types, and `visibleParts`. It imports
 * nothing at runtime, so a page's bundle (through `@cairn/ai-sdk/client`) holds none of Cairn's server code.
 */

/**
 * A chunk of the AI SDK's UI message stream (protocol v1, what `useChat` reads): `start`, `text-start`,
 * `text-delta`, `tool-input-start`, `finish`, `data-*` and the rest, as JSON.
 */
export interface UIMessageChunk {
  [key: string]: unknown;
  type: string;
}

/** The data part a `superseded` marker becomes: the UI drops the parts it names. */
export interface SupersededData {
  /** The run's unit (a model call) whose earlier chunks no longer count. */
  unit: string;
  /** The ids of the text and reasoning parts, and the tool call ids, a client shows for them and drops. */
  partIds: string[];
  toolCallIds: string[];
  /** The stream positions that no longer count. */
  positions: number[];
}

/** A part of an AI SDK `UIMessage`, as far as `visibleParts` reads it. */
interface MessagePart {
  type: string;
  providerMetadata?: unknown;
  toolCallId?: unknown;
  data?: unknown;
}

/**
 * The parts of a `useChat` message a person should see: without the text, reasoning and tool calls a crash
 * superseded (named by the message's `data-cairn-superseded` parts), and without those data parts. Render
 * `visibleParts(message)` instead of `message.parts`.
 */
export function visibleParts<Part extends MessagePart>(message: {
  parts: readonly Part[];
}): Part[] {
  const partIds = new Set<string>();
  const toolCallIds = new Set<string>();
  for (const part of message.parts) {
    if (part.type !== 'data-cairn-superseded') continue;
    const data = part.data as Partial<SupersededData> | undefined;
    for (const id of data?.partIds ?? []) partIds.add(id);
    for (const id of data?.toolCallIds ?? []) toolCallIds.add(id);
  }
  return message.parts.filter((part) => {
    if (part.type === 'data-cairn-superseded') return false;
    const cairn = (part.providerMetadata as { cairn?: { partId?: unknown } } | undefined)?.cairn;
    if (typeof cairn?.partId === 'string' && partIds.has(cairn.partId)) return false;
    return !(typeof part.toolCallId === 'string' && toolCallIds.has(part.toolCallId));
  });
}
