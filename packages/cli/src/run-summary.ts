/** A run as `cairn` prints it for scripts (`--json`): the record's fields an operator acts on, not its checkpoint. */
import { sealedSnapshotMark, type JsonValue, type RunStatus } from '@cairn/sdk';
import type { RunInfo, WaitingFor } from '@cairn/worker';
import { encryptedText, hasEncryptedPayloads } from './encrypted-view.js';

/** One run in `runs list --json`, and the head of `runs show --json`. Times are ms since the epoch. */
export interface RunSummary {
  runId: string;
  kind: string;
  name: string;
  status: RunStatus;
  /** The lease holder of the current or last lease, or null. */
  owner: string | null;
  /** A live worker holds the run now (its lease has not run out, and the store does not know its holder gone). */
  held: boolean;
  /** The store knows the holder's process is gone (see `RunRecord.holderGone`); null when it cannot tell. */
  holderGone: boolean | null;
  leaseUntil: number | null;
  epoch: number;
  recoveries: number;
  cancelRequested: boolean;
  parentRunId: string | null;
  rootRunId: string | null;
  createdAt: number;
  updatedAt: number;
  /** Why it failed, was cancelled or suspended. */
  error: { code: string; message: string } | null;
  /** What a waiting run waits for; null in every other status. */
  waitingFor: WaitingFor | null;
  /**
   * Why the run's stored rows cannot be read (changed behind the store's back, or payloads the codec given cannot
   * decode), or null.
   */
  unreadable: string | null;
  /** Its payloads are encrypted and the command has no codec (`--codec`): each shows as "(encrypted)". */
  encrypted: boolean;
}

/** The summary of a run a client read. */
export function runSummary(info: RunInfo): RunSummary {
  return {
    runId: info.runId,
    kind: info.kind,
    name: info.name,
    status: info.status,
    owner: info.owner,
    held: info.held,
    holderGone: info.holderGone ?? null,
    leaseUntil: info.leaseUntil,
    epoch: info.epoch,
    recoveries: info.recoveries,
    cancelRequested: info.cancelRequested,
    parentRunId: info.parent?.runId ?? null,
    rootRunId: info.rootRunId,
    createdAt: info.createdAt,
    updatedAt: info.updatedAt,
    error: info.error === undefined ? null : { code: info.error.code, message: info.error.message },
    waitingFor: info.waitingFor,
    unreadable: info.unreadable ?? null,
    encrypted: hasEncryptedPayloads(info),
  };
}

/**
 * The input a run started from, as its checkpoint keeps it: an agent's prompt (`state.input`), a planner's
 * goal (`state.goal`), or the input of a run started by name that no worker has begun (`start.input`); "(encrypted)"
 * in a checkpoint a codec encoded.
 */
export function runInput(snapshot: JsonValue | null): JsonValue | undefined {
  if (!isObject(snapshot)) return undefined;
  if (snapshot[sealedSnapshotMark] === 1) return encryptedText;
  if (isObject(snapshot.start) && 'input' in snapshot.start) return snapshot.start.input;
  const state = snapshot.state;
  if (!isObject(state)) return undefined;
  if (typeof state.goal === 'string') return state.goal;
  return state.input;
}

/** The step function's state a checkpoint holds, or undefined before the first one. */
export function runState(snapshot: JsonValue | null): JsonValue | undefined {
  return isObject(snapshot) ? snapshot.state : undefined;
}

function isObject(value: JsonValue | undefined | null): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
