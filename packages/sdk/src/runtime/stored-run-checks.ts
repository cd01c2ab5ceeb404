import { deserializeError, snapshotInvalidError } from '../errors.js';
import { isTerminalStatus, type RunRecord } from '../store/contract.js';
import type { DurableRunResult } from './run-options.js';
import { parseRuntimeSnapshot, unstartedSignature } from './runtime-snapshot.js';
import type { DurableDefinition } from './step-function.js';

/** Refuses a run whose stored checkpoint was written by another definition (drift), unless forced. */
export function checkDrift<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  record: RunRecord,
  force: boolean,
): void {
  // A run started by name has not met a definition yet: its first checkpoint writes the signature.
  if (
    !force &&
    record.signature !== unstartedSignature &&
    record.signature !== definition.signature
  ) {
    throw definition.driftError(record.runId, record.signature, definition.signature);
  }
}

/** The stored end of a finished run, which resuming returns (or throws) without performing anything. */
export function finishedResult<State, Input, Output>(
  definition: DurableDefinition<State, Input, Output>,
  record: RunRecord,
): DurableRunResult<State, Output> | undefined {
  if (record.status === 'completed') {
    const snapshot = parseRuntimeSnapshot(record.runId, record.snapshot, (s) =>
      definition.parseState(s),
    );
    return {
      runId: record.runId,
      output: definition.parseOutput(record.output ?? null),
      state: snapshot.state,
      epoch: null,
      resumed: true,
    };
  }
  if (isTerminalStatus(record.status)) {
    throw deserializeError(
      record.error ?? {
        name: 'CairnError',
        code:
          record.status === 'cancelled'
            ? 'RUN_CANCELLED'
            : record.status === 'dead_lettered'
              ? 'RUN_DEAD_LETTERED'
              : 'RUN_FAILED',
        message: `Run "${record.runId}" ended ${record.status}.`,
        retryable: false,
      },
    );
  }
  return undefined;
}

/**
 * Refuses a snapshot that names another journal seq than its checkpoint was saved with (`StoredRun.checkpointSeq`,
 * when the store says): changed behind the store's back, its seqs would fall below marks already written.
 */
export function checkCheckpointSeq(
  runId: string,
  snapshotSeq: number,
  checkpointSeq: number | undefined,
): void {
  if (checkpointSeq === undefined || checkpointSeq === snapshotSeq) return;
  throw snapshotInvalidError(
    runId,
    `its snapshot accounts for the journal up to ${snapshotSeq}, its checkpoint was written up to ${checkpointSeq}`,
  );
}
