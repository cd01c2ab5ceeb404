/** `cairn runs watch <runId>`: a run's events as they are written, one line each, and its text as it streams. */
import type { StreamChunk } from '@cairn/sdk';
import type { CommandContext } from '../command-context.js';
import { exitCodes } from '../cli-errors.js';
import { renderEventLine } from '../render/event-line.js';

/**
 * Prints each event once, in order, and between them the text the run's model calls stream (on a store that keeps
 * streams), as it comes; text a crash superseded is marked so. `--json` prints each event as a JSON line with its
 * `seq` (no text), so a script that was cut off resumes with `--after <last seq>`. Ends with the run (exit 0), or
 * on Ctrl-C (exit 130).
 */
export async function watchRun(
  context: CommandContext,
  { runId, after }: { runId: string; after: number },
): Promise<number> {
  const events = context.client.watch(runId, {
    after,
    ...(context.signal === undefined ? {} : { signal: context.signal }),
  });
  const text = context.json ? undefined : new TextPrinter(context);
  const ended = new AbortController();
  const streaming = text?.follow(runId, ended.signal);
  try {
    for await (const event of events) {
      if (context.json) context.printJson(event, { line: true });
      else text!.line(renderEventLine(event, context.style));
    }
  } finally {
    ended.abort();
    await streaming;
    text?.endLine();
  }
  return context.signal?.aborted === true ? exitCodes.interrupted : exitCodes.ok;
}

/** Streamed text between event lines: a line is printed on a line of its own. */
class TextPrinter {
  private midLine = false;

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
   * Prints the run's stream, and reads it again each time it ends (a run that waited goes on later) until `ended`
   * (the run's events ended): the last read goes on until the text written before the end is printed. Ctrl-C
   * stops it at once. A store that keeps no streams prints nothing.
   */
  async follow(runId: string, ended: AbortSignal): Promise<void> {
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
          this.print(chunk);
        }
      } catch {
        return; // No stream to read (a store without one): the events say what happened.
      }
      if (ending || interrupted?.aborted === true) return;
      if (ended.aborted) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 250);
        ended.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  private print({ part, unit }: StreamChunk): void {
    const { style } = this.context;
    if (part.type === 'text' || part.type === 'reasoning') {
      this.context.write(part.type === 'text' ? part.text : style.faint(part.text));
      this.midLine = !part.text.endsWith('\n');
    } else if (part.type === 'superseded') {
      this.line(
        style.warn(`(superseded: what ${unit} said above no longer counts; it is said again)`),
      );
    }
  }
}
