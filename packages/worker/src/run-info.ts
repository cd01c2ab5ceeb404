import { pendingApprovals, type PendingApprovalView, type RunRecord } from '@cairn/sdk';

/** What a waiting run waits for, as a client reads it. */
export interface WaitingFor {
  /** When it wakes by itself (ms since the epoch, on the clock of the worker that wrote the wait), or null. */
  until: number | null;
  /** Names of the signals that wake it. */
  signals: string[];
  /** An agent's tool calls waiting for a decision (`approve` / `reject`), with the `argsHash` to approve. */
  approvals: PendingApprovalView[];
  /** When an agent that put itself to sleep (`waitUntilTool`) continues, or null. */
  sleepingUntil: number | null;
}

/** A run as a client sees it: its record, whether a live worker holds it now, and what it waits for. */
export interface RunInfo extends RunRecord {
  /**
   * A live worker holds it: an unexpired lease (as of the client's clock) whose holder the store does not know to
   * be gone (`holderGone`: a killed worker's runs stop counting as held within a second, not when the lease ends).
   */
  held: boolean;
  /** Null unless the run is `waiting`. */
  waitingFor: WaitingFor | null;
}

/** Reads a record for a client, `now` on the client's clock. */
export function runInfo(record: RunRecord, now: number): RunInfo {
  return {
    ...record,
    held:
      record.owner !== null &&
      record.leaseUntil !== null &&
      record.leaseUntil > now &&
      record.holderGone !== true,
    waitingFor: record.status === 'waiting' ? waitingFor(record) : null,
  };
}

function waitingFor(record: RunRecord): WaitingFor {
  const detail = record.wait?.detail;
  const sleepingUntil =
    detail !== null && typeof detail === 'object' && !Array.isArray(detail)
      ? detail.sleepingUntil
      : undefined;
  return {
    until: record.wait?.until ?? null,
    signals: [...(record.wait?.signals ?? [])],
    approvals: pendingApprovals(detail),
    sleepingUntil: typeof sleepingUntil === 'number' ? sleepingUntil : null,
  };
}
