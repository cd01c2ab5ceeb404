/** `cairn runs reencrypt` and `cairn runs forget`: what only a store behind the runs' codec can do. */
import { createClient } from '@cairn/worker';
import { UsageError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import type { Command } from '../parse-args.js';

/** The client over the store as opened, with its codec: these commands need the codec, never the hidden view. */
function codecClient(context: CommandContext, command: string) {
  const { store } = context.opened;
  if (store.reencrypt === undefined || store.forget === undefined) {
    throw new UsageError(
      `runs ${command} needs the runs' codec: give --codec (or a --module whose store is behind protectPayloads).`,
    );
  }
  return createClient({ store });
}

/**
 * Moves every stored payload to the key the codec writes with now, printing progress a page at a time; exit 0
 * when every run was read (runs it could not read are listed, exit 1).
 */
export async function reencryptRuns(
  context: CommandContext,
  { query, concurrency }: Extract<Command, { name: 'reencrypt' }>,
): Promise<number> {
  const report = await codecClient(context, 'reencrypt').reencrypt({
    filter: query,
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(context.signal === undefined ? {} : { signal: context.signal }),
    onProgress: (so) => {
      if (!context.json) context.warn(`${so.runs} runs read, ${so.rewritten} moved so far`);
    },
  });
  if (context.json) {
    context.printJson(report);
  } else {
    context.print(
      `${report.complete ? 'Re-encrypted' : 'Stopped after'} ${report.runs} runs: ${report.rewritten} had ` +
        `payloads under another key (${report.payloads} moved, ${report.raced} written over by their holders ` +
        'meanwhile).',
    );
    for (const { runId, reason } of report.unreadable)
      context.print(`  could not read ${runId}: ${reason}`);
  }
  return report.unreadable.length === 0 ? 0 : 1;
}

/** Forgets a subject (its keys, then its runs) or one run; exit 1 when runs were still held at the timeout. */
export async function forgetRuns(
  context: CommandContext,
  { target, timeoutMs }: Extract<Command, { name: 'forget' }>,
): Promise<number> {
  const report = await codecClient(context, 'forget').forget(
    target,
    timeoutMs === undefined ? {} : { timeoutMs },
  );
  if (context.json) {
    context.printJson(report);
  } else {
    const what = 'subject' in target ? `subject ${target.subject}` : `run ${target.runId}`;
    context.print(
      `Forgot ${what}: ${report.keysDeleted ? 'its keys deleted, ' : ''}${report.deleted.length} runs deleted` +
        (report.remaining.length === 0
          ? '.'
          : `; still held, forget again: ${report.remaining.join(', ')}.`),
    );
  }
  return report.remaining.length === 0 ? 0 : 1;
}
