import type { ClaimableOptions } from '@cairn/sdk';
import { query, type Db } from '../db.js';
import type { Names } from '../names.js';
import { awake, dueWaitingRuns, wakeClock } from './due-waits.js';

const ofClaimer = `r.parent_run_id IS NULL AND (r.kind, r.name) IN (SELECT d.kind, d.name FROM defs d)`;
const claimable = `r.status IN ('queued', 'running', 'suspended') AND ${ofClaimer}`;
const now = wakeClock('$4');
const claimableOrDue = `${awake(now)} AND ${ofClaimer}`;

/**
 * Ids of runs a worker may claim, oldest first: root runs of one of its definitions in a claimable status, or
 * waiting and due at `now` (see `due-waits.ts`), with no owner, a holder whose session was found dead, a lease
 * that ran out, or (with `reclaimOwner`) this owner's. Each source is read by its own index in O(limit), as
 * `claimRuns` reads them. A hint only, read without locks: `acquire` or `claim` decides.
 */
export async function claimableRuns(
  db: Db,
  names: Names,
  { limit, definitions, reclaimOwner, now: claimerNow }: ClaimableOptions,
): Promise<string[]> {
  if (definitions.length === 0 || limit <= 0) return [];
  const [dueByTime, woken] = dueWaitingRuns(names, {
    filter: ofClaimer,
    now,
    limit: '$2::int',
    lock: '',
  });
  const rows = await query(
    db,
    `WITH defs AS (
       SELECT d ->> 'kind' AS kind, d ->> 'name' AS name FROM jsonb_array_elements($1::text::jsonb) d
     ), candidates AS (
       (SELECT r.run_id, r.created_seq FROM ${names.runs} r
         WHERE r.owner IS NULL AND ${claimable} ORDER BY r.created_seq LIMIT $2::int)
       UNION
       (SELECT d.run_id, d.created_seq FROM (${dueByTime}) d)
       UNION
       (SELECT w.run_id, w.created_seq FROM (${woken}) w)
       UNION
       (SELECT r.run_id, r.created_seq FROM ${names.runs} r
         WHERE r.holder_session IN (SELECT s.id FROM ${names.sessions} s WHERE s.dead_at IS NOT NULL)
           AND r.owner IS NOT NULL AND ${claimableOrDue} ORDER BY r.created_seq LIMIT $2::int)
       UNION
       (SELECT r.run_id, r.created_seq FROM ${names.runs} r
         WHERE r.owner IS NOT NULL AND r.lease_until < now() AND ${claimableOrDue}
         ORDER BY r.created_seq LIMIT $2::int)
       UNION
       (SELECT r.run_id, r.created_seq FROM ${names.runs} r
         WHERE $3::text IS NOT NULL AND r.owner = $3::text AND ${claimableOrDue}
         ORDER BY r.created_seq LIMIT $2::int)
     )
     SELECT c.run_id FROM candidates c ORDER BY c.created_seq LIMIT $2::int`,
    [
      JSON.stringify(definitions.map(({ kind, name }) => ({ kind, name }))),
      limit,
      reclaimOwner ?? null,
      claimerNow ?? null,
    ],
  );
  return rows.map((row) => row[0] as string);
}
