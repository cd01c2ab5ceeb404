import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { finalStatusList } from '../row.js';
import {
  claimedColumns,
  claimedOrSessionLost,
  decodeClaimed,
  ownSession,
  sessionLost,
} from './claimed.js';

/** One run to claim, for `owner`, recorded as held through `session` (null without sessions). */
export interface ClaimRequest {
  runId: string;
  owner: string;
  ttlMs: number;
  reclaimOwn: boolean;
  session: number | null;
  /** This store instance: the runs of its own lost sessions are always its to take. */
  instance: string;
  /** Take a run of another instance's dead session (once this claimer's own session is past the grace). */
  takeOthers: boolean;
  /** How long a session must have been found dead before another instance takes its runs. */
  graceMs: number;
}

/**
 * Claims one run in one statement: bumps the epoch and records the owner, the session and the lease end on
 * the database clock, and returns the run as claimed (record and journal). The run must be a root run not in
 * a final status, and free: no owner, a lease that ran out, a lease of this same owner (`reclaimOwn`, a
 * restarted process), or a holder whose session is gone by the rule of workers' batch claims (`claimRuns`): a
 * session of this same instance (marked dead, or found gone here, its liveness lock free), or another instance's
 * session marked dead by a probe at least the grace ago while that instance has no live session, so a holder
 * whose connection only blipped (it opens a new session and moves its runs there) keeps them, whichever path
 * claims (`execute`, `resume`, a client's cancel). A claim from a holder that never released the run counts as a
 * recovery. Undefined when the run cannot be claimed or does not exist; `session-lost` when the claimer's own
 * session is gone.
 */
export async function claimRun(
  db: Db,
  names: Names,
  request: ClaimRequest,
): Promise<Lease | undefined | 'session-lost'> {
  const rows = await query(
    db,
    `WITH ${ownSession(names, '$5::bigint')}, claimed AS (
       UPDATE ${names.runs} r
          SET epoch = r.epoch + 1, owner = $2::text,
              recoveries = r.recoveries + (r.owner IS NOT NULL)::int,
              lease_until = now() + $3::float8 * interval '1 millisecond', lease_ms = $3::int,
              heartbeat_at = now(), holder_session = $5::bigint
         FROM (SELECT p.run_id, p.owner FROM ${names.runs} p WHERE p.run_id = $1::text FOR UPDATE) previous
        WHERE r.run_id = previous.run_id AND r.parent_run_id IS NULL AND r.status NOT IN ${finalStatusList}
          AND (SELECT me.alive FROM me)
          AND (r.owner IS NULL OR r.lease_until < now() OR ($4::boolean AND r.owner = $2::text)
               OR EXISTS (SELECT 1 FROM ${names.sessions} s
                           WHERE s.id = r.holder_session
                             AND ((s.instance = $6::uuid
                                   AND (s.dead_at IS NOT NULL OR pg_try_advisory_xact_lock(s.lock_key)))
                                  OR ($7::boolean AND s.dead_at IS NOT NULL
                                      AND s.dead_at < now() - $8::float8 * interval '1 millisecond'
                                      AND NOT EXISTS (SELECT 1 FROM ${names.sessions} l
                                                       WHERE l.instance = s.instance AND l.dead_at IS NULL)))))
       RETURNING ${claimedColumns(names, 'r', 'previous.owner')}
     )
     ${claimedOrSessionLost()}`,
    [
      request.runId,
      request.owner,
      request.ttlMs,
      request.reclaimOwn,
      request.session,
      request.instance,
      request.takeOthers,
      request.graceMs,
    ],
  );
  if (sessionLost(rows)) return 'session-lost';
  const row = rows[0];
  return row === undefined ? undefined : decodeClaimed(row, request.owner);
}

/** Whether a run with this id exists. */
export async function runExists(db: Db, names: Names, runId: string): Promise<boolean> {
  const rows = await query(db, `SELECT 1 FROM ${names.runs} WHERE run_id = $1::text`, [runId]);
  return rows.length === 1;
}
