import {
  isCairnError,
  RunSuspendedError,
  RunWaitingError,
  serializeError,
  type CairnErrorCode,
} from '../errors.js';
import { storableJson } from '../json.js';
import {
  isTerminalStatus,
  type DurableStore,
  type RunRecord,
  type StatusUpdate,
} from '../store/contract.js';
import type { Attempt } from './attempt.js';
import type { EffectPool } from './effect-pool.js';
import type { RunWriter } from './run-writer.js';

/**
 * Errors that end an attempt as they should, or that a next attempt cannot be told apart from by trying (a
 * changed definition, a corrupted run whose rows are left as they are): they are not stalls.
 */
const notStalls: ReadonlySet<CairnErrorCode> = new Set<CairnErrorCode>([
  'RUN_WAITING',
  'RUN_NOT_FOUND',
  'AGENT_DRIFT',
  'PLANNER_DRIFT',
  'SNAPSHOT_INVALID',
  'PAYLOAD_UNREADABLE',
  'SUBJECT_FORGOTTEN',
  'LEASE_LOST',
  'RUN_CANCELLED',
  'RUN_RELEASED',
  'RUN_DEAD_LETTERED',
]);

/** What a stopping attempt still does, depending on why it stops. */
export async function stopAfterError<State, Input, Output>(
  error: unknown,
  attempt: Attempt,
  writer: RunWriter | undefined,
  pool: EffectPool<State, Input, Output> | undefined,
  store: DurableStore,
  loaded: RunRecord | undefined,
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
      : stopped === undefined
        ? stall(error, writer, loaded)
        : undefined;
  if (update === undefined) return;
  // The store may still be down; a run left `running` is recovered when its lease runs out.
  await store.updateStatus(attempt.fence, update).catch(() => undefined);
}

/**
 * The status update of an attempt that ended in an error before the run could go on (a store that kept failing,
 * an error the runtime could not get past), counted in `stalls` so that a run that never gets going ends (see
 * `tooManyStalls`); undefined for an attempt that ended as it should or ended the run. An attempt woken from a
 * wait that wrote nothing leaves the run waiting, with its wait; any other is suspended with the error.
 */
function stall(
  error: unknown,
  writer: RunWriter,
  loaded: RunRecord | undefined,
): StatusUpdate | undefined {
  if (error instanceof RunWaitingError || loaded === undefined) return undefined;
  if (!(error instanceof RunSuspendedError) && isCairnError(error) && notStalls.has(error.code))
    return undefined;
  const ended = writer.lastWrittenStatus;
  if (ended !== undefined && isTerminalStatus(ended)) return undefined;
  return {
    status: loaded.status === 'waiting' && !writer.progressed ? 'waiting' : 'suspended',
    error: storableJson(serializeError(error)),
    stalls: writer.progressed ? 1 : loaded.stalls + 1,
  };
}
