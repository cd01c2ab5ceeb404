import { CairnError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { DurableStore } from '../store/contract.js';
import { listPages } from '../store/list-pages.js';
import type { ReencryptOptions, ReencryptReport } from '../store/reencrypt-types.js';
import type { StreamChunk } from '../store/stream.js';
import { PayloadUnreadableError, type PayloadContext } from './codec.js';
import { PayloadProtector, type ProtectOptions } from './sealed-parts.js';
import { PayloadSealer, sealedHeader } from './sealer.js';

/** A sealer that records every payload it opens with where it was, so each can be encoded again for its place. */
class RecordingSealer extends PayloadSealer {
  readonly opened: Array<{ stored: string; context: PayloadContext; value: JsonValue }> = [];

  override async open(stored: unknown, context: PayloadContext): Promise<JsonValue> {
    const value = await super.open(stored, context);
    // A copy: what opened it may fill the value in (a snapshot body gets its arrays back).
    this.opened.push({ stored: stored as string, context, value: structuredClone(value) });
    return value;
  }
}

/** A protector whose every open is recorded (one per run: its subject and its record are its own). */
function recordingProtector(options: ProtectOptions): {
  protector: PayloadProtector;
  sealer: RecordingSealer;
} {
  const sealer = new RecordingSealer(options);
  return { protector: new PayloadProtector(options, sealer), sealer };
}

/**
 * Moves every stored payload to the codec and key new payloads are written with (after a key rotation, or a
 * codec added), run by run, while runs go on: each run's payloads are read through the store, encoded again
 * for the same place, and replaced in one atomic step of the store (`replacePayloads`), which leaves alone any a
 * holder wrote over meanwhile. Payloads already current are left as they are, so a second pass is cheap and a
 * pass interrupted can simply be run again. Ended runs are moved too: they are never written again otherwise.
 */
export async function reencrypt(
  raw: DurableStore,
  options: ProtectOptions,
  reencryptOptions: ReencryptOptions = {},
): Promise<ReencryptReport> {
  if (raw.replacePayloads === undefined || raw.signalPayloads === undefined) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      'This store cannot replace stored payloads (it has no replacePayloads): it cannot be re-encrypted.',
    );
  }
  const concurrency = reencryptOptions.concurrency ?? 8;
  const pageSize = reencryptOptions.pageSize ?? 500;
  const report: ReencryptReport = {
    runs: 0,
    rewritten: 0,
    payloads: 0,
    raced: 0,
    unreadable: [],
    complete: false,
  };
  const createdBefore = reencryptOptions.createdBefore ?? Date.now() + 60_000;
  const pages = listPages(raw, reencryptOptions.filter ?? {}, pageSize);
  for await (const listed of pages) {
    // Oldest first: past the first run created too late, every run is.
    const page = listed.filter((run) => run.createdAt < createdBefore);
    let next = 0;
    const worker = async () => {
      while (next < page.length) {
        const run = page[next]!;
        next += 1;
        await reencryptRun(raw, options, run.runId, report);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
    reencryptOptions.onProgress?.({ ...report, unreadable: [...report.unreadable] });
    if (reencryptOptions.signal?.aborted === true) return report;
    if (page.length < listed.length) break;
  }
  report.complete = true;
  return report;
}

/** Moves one run's payloads; adds what it did to `report`. */
async function reencryptRun(
  raw: DurableStore,
  options: ProtectOptions,
  runId: string,
  report: ReencryptReport,
): Promise<void> {
  const stored = await raw.load(runId);
  if (stored === undefined) return;
  report.runs += 1;
  const { incarnation } = stored.run;
  const { protector, sealer } = recordingProtector(options);
  try {
    await protector.openStoredRun(stored);
    for (const signal of await raw.signalPayloads!(runId))
      await protector.openSignalPayload(runId, signal.name, signal.payload);
    if (raw.readStream !== undefined) {
      for (let after = 0; ;) {
        const chunks: StreamChunk[] = await raw.readStream(runId, { after, limit: 1_000 });
        if (chunks.length === 0) break;
        await protector.openChunks(chunks, runId, incarnation);
        after = chunks.at(-1)!.position;
      }
    }
  } catch (error) {
    if (!(error instanceof PayloadUnreadableError)) throw error;
    report.unreadable.push({ runId, reason: error.message });
    return;
  }
  const replacements = new Map<string, string>();
  for (const { stored: old, context, value } of sealer.opened) {
    if (replacements.has(old)) continue;
    const fresh = await sealer.seal(value, context);
    if (sealedHeader(fresh) !== sealedHeader(old)) replacements.set(old, fresh);
  }
  if (replacements.size === 0) return;
  const found = await raw.replacePayloads!(runId, incarnation, replacements);
  if (found > 0) report.rewritten += 1;
  report.payloads += found;
  report.raced += replacements.size - found;
}
