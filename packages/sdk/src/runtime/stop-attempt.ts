import { RunSuspendedError, serializeError } from '../errors.js';
import { storableJson } from '../json.js';
import type { DurableStore } from '../store/contract.js';
import type { Attempt } from './attempt.js';
import type { EffectPool } from './effect-pool.js';
import type { RunWriter } from './run-writer.js';

/** What a stopping attempt still does, depending on why it stops. */
export async function stopAfterError<State, Input, Output>(
  error: unknown,
  attempt: Attempt,
  writer: RunWriter | undefined,
  pool: EffectPool<State, Input, Output> | undefined,
  store: DurableStore,
): Promise<void> {
  const stopped = attempt.stopped;
  // A crashed process writes nothing more, and a holder that lost its lease may not.
  if (stopped?.type === 'crashed' || stopped?.type === 'lease-lost' || writer === undefined) return;
  // The lease is kept until the effects still in flight have ended (those of a hand-over or a suspension
  // run to their end or their timeout; the others were aborted, and one that ignores its signal is abandoned
  // a short grace later), so the next holder never starts while one of ours runs...
  await pool?.drain();
  if (attempt.stopped?.type === 'crashed' || attempt.stopped?.type === 'lease-lost') return;
  // ...and what settled meanwhile is written, so the next holder reuses it instead of reporting it unknown.
  await writer.flush().catch(() => undefined);
  const update =
    stopped?.type === 'cancelled'
      ? { status: 'cancelled' as const, error: storableJson(serializeError(error)) }
      : error instanceof RunSuspendedError
        ? { status: 'suspended' as const, error: storableJson(serializeError(error)) }
        : undefined;
  if (update === undefined) return;
  // The store may still be down; a run left `running` is recovered when its lease runs out.
  await store.updateStatus(attempt.fence, update).catch(() => undefined);
}
