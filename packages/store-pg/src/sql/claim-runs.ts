import type { Lease } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { createdAtOf } from '../row.js';
import { awake, dueWaitingRuns, wakeClock } from './due-waits.js';
import {
  claimedColumns,
  claimedOrSessionLost,
  decodeClaimed,
  ownSession,
  sessionLost,
} from './claimed.js';

/** What a worker claims at once. */
export interface BatchClaim {
  owner: string;
  ttlMs: number;
  limit: number;
  definitions: ReadonlyArray<{ kind: string; name: string }>;
  /** Also runs still leased to this owner (a restarted process taking back what it held). */
  reclaimOwner: string | null;
  session: number | null;
  /** This store instance: the runs of its own lost sessions are always its to take. */
  instance: string;
  /** Take the runs of other instances' dead sessions (once this claimer's own session is past the grace). */
  takeOthers: boolean;
  /** How long a session must have been found dead before another instance takes its runs. */
  graceMs: number;
  /** Also look for leases that ran out although their session lives (a frozen or leaked holder). */
  sweepExpired: boolean;
  /** Run ids not to claim now. */
  skip: readonly string[];
  /** The claimer's clock, which decides whether a waiting run's time came; null: the database's. */
  now: number | null;
}

const ofClaimer = `r.parent_run_id IS NULL
         AND (r.kind, r.name) IN (SELECT d.kind, d.name FROM defs d) AND r.run_id <> ALL($11::text[])`;
const claimable = `r.status IN ('queued', 'running', 'suspended') AND ${ofClaimer}`;
const now = wakeClock('$12');
/** Claimable, or waiting and due: what a run held by a holder that is gone must be to be taken. */
const claimableOrDue = `${awake(now)} AND ${ofClaimer}`;

/**
 * Claims up to `limit` runs in one statement, oldest first, and returns them as claimed (record, journal and
 * mailbox). Each source of claimable runs is read by its own index, in O(runs taken): runs nobody holds;
 * waiting runs nobody holds that are due (see `due-waits.ts`); runs of dead sessions (of this instance, or of
 * instances with no live session found dead past the grace, so after a failover every instance first moves
 * its own runs back instead of taking each other's); with `sweepExpired`, leases that ran out; with
 * `reclaimOwner`, this owner's (of these three, a waiting run only once it is due). Rows are taken `FOR UPDATE SKIP
 * LOCKED`, so workers claiming at the same moment take different runs and none waits for another. A claim
 * from a holder that never released the run counts as a recovery. Nothing is claimed, and `session-lost`
 * returned, when the claimer's own session is gone.
 */
export async function claimRuns(
  db: Db,
  names: Names,
  claim: BatchClaim,
): Promise<Lease[] | 'session-lost'> {
  if (claim.limit <= 0 || claim.definitions.length === 0) return [];
  const [dueByTime, woken] = dueWaitingRuns(names, {
    filter: ofClaimer,
    now,
    limit: '$2::int',
    lock: 'FOR UPDATE SKIP LOCKED',
  });
  const rows = await query(
    db,
    `WITH ${ownSession(names, '$6::bigint')}, defs AS (
       SELECT d ->> 'kind' AS kind, d ->> 'name' AS name FROM jsonb_array_elements($1::text::jsonb) d
     ), takeable AS (
       SELECT s.id FROM ${names.sessions} s
        WHERE s.dead_at IS NOT NULL
          AND (s.instance = $7::uuid
               OR ($8::boolean AND s.dead_at < now() - $9::float8 * interval '1 millisecond'
                   AND NOT EXISTS (SELECT 1 FROM ${names.sessions} l
                                    WHERE l.instance = s.instance AND l.dead_at IS NULL)))
     ), free AS (
       SELECT r.run_id, r.created_seq, r.owner FROM ${names.runs} r
        WHERE r.owner IS NULL AND ${claimable}
        ORDER BY r.created_seq LIMIT $2::int FOR UPDATE SKIP LOCKED
     ), due AS (
       ${dueByTime}
     ), woken AS (
       ${woken}
     ), abandoned AS (
       SELECT r.run_id, r.created_seq, r.owner FROM ${names.runs} r
        WHERE r.holder_session IN (SELECT t.id FROM takeable t) AND r.owner IS NOT NULL AND ${claimableOrDue}
        ORDER BY r.created_seq LIMIT $2::int FOR UPDATE SKIP LOCKED
     ), expired AS (
       SELECT r.run_id, r.created_seq, r.owner FROM ${names.runs} r
        WHERE $10::boolean AND r.owner IS NOT NULL AND r.lease_until < now() AND ${claimableOrDue}
        ORDER BY r.created_seq LIMIT $2::int FOR UPDATE SKIP LOCKED
     ), reclaimed AS (
       SELECT r.run_id, r.created_seq, r.owner FROM ${names.runs} r
        WHERE $5::text IS NOT NULL AND r.owner = $5::text AND ${claimableOrDue}
        ORDER BY r.created_seq LIMIT $2::int FOR UPDATE SKIP LOCKED
     ), chosen AS (
       SELECT c.run_id, c.owner FROM (SELECT * FROM free UNION SELECT * FROM due UNION SELECT * FROM woken
                                      UNION SELECT * FROM abandoned
                                      UNION SELECT * FROM expired UNION SELECT * FROM reclaimed) c
        ORDER BY c.created_seq LIMIT $2::int
     ), claimed AS (
       UPDATE ${names.runs} r
          SET epoch = r.epoch + 1, owner = $3::text,
              recoveries = r.recoveries + (r.owner IS NOT NULL)::int,
              lease_until = now() + $4::float8 * interval '1 millisecond', lease_ms = $4::int,
              heartbeat_at = now(), holder_session = $6::bigint
         FROM chosen c
        WHERE r.run_id = c.run_id AND (SELECT me.alive FROM me)
       RETURNING ${claimedColumns(names, 'r', 'c.owner')}
     )
     ${claimedOrSessionLost()}`,
    [
      JSON.stringify(claim.definitions.map(({ kind, name }) => ({ kind, name }))),
      claim.limit,
      claim.owner,
      claim.ttlMs,
      claim.reclaimOwner,
      claim.session,
      claim.instance,
      claim.takeOthers,
      claim.graceMs,
      claim.sweepExpired,
      claim.skip,
      claim.now,
    ],
  );
  if (sessionLost(rows)) return 'session-lost';
  return [...rows]
    .sort((a, b) => createdAtOf(a) - createdAtOf(b))
    .map((row) => decodeClaimed(row, claim.owner));
}
