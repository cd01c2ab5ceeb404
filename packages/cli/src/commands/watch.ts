/** `cairn runs watch <runId>`: a run's events as they are written, one line each, and its text as it streams. */
import {
  childRunId,
  isTerminalStatus,
  planView,
  RunNotFoundError,
  type RunEvent,
  type StreamChunk,
} from '@cairn/sdk';
import type { CommandContext } from '../command-context.js';
import { exitCodes } from '../cli-errors.js';
import { encryptedNote, hasEncryptedPayloads } from '../encrypted-view.js';
import { EventNotes } from '../render/takeover-notes.js';
import { runState } from '../run-summary.js';

/**
 * Prints each event once, in order, and between them the text the run's model calls stream (on a store that keeps
 * streams), as it comes; text a crash superseded is marked so. A run that already ended is told in the order it
 * happened (events and text merged by time). `--json` prints each event as a JSON line with its
 * `seq` (no text), so a script that was cut off resumes with `--after <last seq>`. Ends with the run (exit 0), or
 * on Ctrl-C (exit 130).
 */
export async function watchRun(
  context: CommandContext,
  { runId, after }: { runId: string; after: number },
): Promise<number> {
  const run = await context.client.get(runId);
  if (run !== undefined && hasEncryptedPayloads(run)) {
    // Said once, first: its history is in its encrypted checkpoint, so few events, if any, will follow.
    const note = encryptedNote("This run's history and payloads");
    if (context.json) context.warn(note);
    else context.print(context.style.faint(note));
  }
  if (!context.json && after === 0 && run !== undefined && isTerminalStatus(run.status)) {
    return replayEnded(context, runId);
  }
  const events = context.client.watch(runId, {
    after,
    ...(context.signal === undefined ? {} : { signal: context.signal }),
  });
  const text = context.json ? undefined : new TextPrinter(context);
  const ended = new AbortController();
  const following = [text?.follow(runId, ended.signal, null)];
  const children = new Set<string>();
  const notes = new EventNotes(context.style);
  try {
    for await (const event of events) {
      if (context.json) context.printJson(event, { line: true });
      else text!.line(notes.line(event));
      // A planner's agent node runs a child run: its text is followed too, and shown under the node.
      if (text !== undefined && event.type === 'effect.started' && event.kind === 'node') {
        const nodeId = nodeIdOf(event.effectId);
        if (event.name.startsWith('invoke_agent ') && !children.has(nodeId)) {
          children.add(nodeId);
          following.push(followChild(context, text, runId, nodeId, ended.signal));
        }
      }
    }
  } finally {
    ended.abort();
    await Promise.all(following);
    text?.endLine();
  }
  return context.signal?.aborted === true ? exitCodes.interrupted : exitCodes.ok;
}

/**
 * A run that ended is told as it happened: its events and the text it (and each agent node's child run) streamed,
 * read whole and merged by time. Read live, they would come in whatever order the reads returned.
 */
async function replayEnded(context: CommandContext, runId: string): Promise<number> {
  const events = await context.client.events(runId);
  const text = new TextPrinter(context);
  const said: Array<{ chunk: StreamChunk; node: string | null }> = [];
  const read = async (id: string, node: string | null) => {
    try {
      for await (const chunk of context.client.stream(id)) said.push({ chunk, node });
    } catch {
      // No stream (a store without one, a child run never created): the events say what happened.
    }
  };
  await read(runId, null);
  for (const nodeId of agentNodes(events)) {
    await read((await childOf(context, runId, nodeId)) ?? childRunId(runId, nodeId), nodeId);
  }
  const told = [
    ...events.map((event, index) => ({ at: event.at, rank: eventRank(event), index, event })),
    ...said.map((item, index) => ({ at: item.chunk.at, rank: 1, index, ...item })),
  ].sort((a, b) => a.at - b.at || a.rank - b.rank || a.index - b.index);
  const notes = new EventNotes(context.style);
  for (const item of told) {
    if ('event' in item) text.line(notes.line(item.event));
    else text.show(item.chunk, item.node);
  }
  text.endLine();
  return exitCodes.ok;
}

/**
 * Where an event goes among text said in the same millisecond: what starts comes before the text said in it,
 * what settles after.
 */
function eventRank(event: RunEvent): number {
  return event.type.endsWith('.started') ? 0 : 2;
}

/** The ids of a planner's agent nodes, each once, in the order they started. */
function agentNodes(events: readonly RunEvent[]): string[] {
  const nodes = new Set<string>();
  for (const event of events) {
    if (event.type !== 'effect.started' || event.kind !== 'node') continue;
    if (event.name.startsWith('invoke_agent ')) nodes.add(nodeIdOf(event.effectId));
  }
  return [...nodes];
}

const nodeIdOf = (effectId: string) => effectId.slice(effectId.lastIndexOf('/') + 1);

/** The child run a planner's node runs, as its plan names it. */
async function childOf(
  context: CommandContext,
  runId: string,
  nodeId: string,
): Promise<string | undefined> {
  const run = await context.client.get(runId).catch(() => undefined);
  const plan = run === undefined ? undefined : planView(runState(run.snapshot), runId);
  return plan?.nodes.find((node) => node.id === nodeId)?.childRunId;
}

/** Follows the text of the child run a planner's node runs, named by the plan (or the node's reserved id). */
async function followChild(
  context: CommandContext,
  text: TextPrinter,
  runId: string,
  nodeId: string,
  ended: AbortSignal,
): Promise<void> {
  const childId = await childOf(context, runId, nodeId);
  await text.follow(childId ?? childRunId(runId, nodeId), ended, nodeId);
}

/**
 * Streamed text between event lines: a line is printed on a line of its own, and a child run's text on lines
 * of its own too, after its node's id.
 */
class TextPrinter {
  private midLine = false;
  /** Whose text the open line holds: the run's (null) or a node's. */
  private speaker: string | null = null;
  /** The unit whose encoded chunks were last told of, so a run of them is told once. */
  private sealedUnit: string | undefined;

  constructor(private readonly context: CommandContext) {}

  line(text: string): void {
    this.endLine();
    this.context.print(text);
  }

  endLine(): void {
    if (this.midLine) this.context.write('\n');
    this.midLine = false;
  }

  /**
   * Prints a run's stream (the watched run's, or with `node` the child run that node runs), and reads it again
   * each time it ends (a run that waited goes on later) until `ended` (the run's events ended): the last read
   * goes on until the text written before the end is printed. Ctrl-C stops it at once. A store that keeps no
   * streams prints nothing; a child run not created yet is looked for again.
   */
  async follow(runId: string, ended: AbortSignal, node: string | null): Promise<void> {
    const { client } = this.context;
    const interrupted = this.context.signal;
    let last = 0;
    for (;;) {
      const ending = ended.aborted;
      try {
        const chunks = client.stream(runId, {
          after: last,
          ...(interrupted === undefined ? {} : { signal: interrupted }),
        });
        for await (const chunk of chunks) {
          last = chunk.position;
          this.show(chunk, node);
        }
      } catch (error) {
        // No stream to read (a store without one): the events say what happened.
        if (!(error instanceof RunNotFoundError && node !== null)) return;
      }
      if (ending || interrupted?.aborted === true) return;
      if (ended.aborted) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 250);
        ended.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  /** Prints one chunk: text as it comes, a marker on a line of its own. */
  show({ part, unit }: StreamChunk, node: string | null): void {
    const { style } = this.context;
    const prefix = node === null ? '' : `  ${node} ▸ `;
    if (part.type === 'sealed') {
      // Encoded by a payload codec this command was not given: said once for each run of such chunks.
      if (this.sealedUnit === unit) return;
      this.sealedUnit = unit;
      this.line(
        style.faint(
          `${prefix}(${unit} said something encrypted: start cairn with --codec to read it)`,
        ),
      );
      return;
    }
    this.sealedUnit = undefined;
    if (part.type === 'text' || part.type === 'reasoning') {
      if (this.speaker !== node || !this.midLine) {
        this.endLine();
        this.context.write(prefix);
        this.speaker = node;
      }
      const said =
        prefix === '' ? part.text : part.text.replaceAll('\n', `\n${' '.repeat(prefix.length)}`);
      this.context.write(part.type === 'text' ? said : style.faint(said));
      this.midLine = !part.text.endsWith('\n');
    } else if (part.type === 'superseded') {
      this.line(
        style.warn(
          `${prefix}(superseded: what ${unit} said above no longer counts; it is said again)`,
        ),
      );
    }
  }
}
