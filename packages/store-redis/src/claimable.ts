import type { ClaimableOptions } from '@cairn/sdk';
import type { StoreContext } from './context.js';
import { scoredEntries } from './indexes.js';
import { bucketCount } from './keys.js';
import { claimableRuns } from './lua/claimable.js';
import { clockArg } from './waits.js';

/**
 * What `claimable` returns: one script per bucket reads the bucket's due entries of its claimable set and of its
 * waits set (waits whose time came on the claimer's clock, `now`), and the runs of holders whose liveness has
 * been gone for the takeover grace, and checks each candidate's record there, so a poll costs O(buckets +
 * claimable runs) commands and reads no held run of a live holder and no run still waiting; the buckets' answers
 * are merged oldest first (by score, ties by id). With `reclaimOwner` each bucket's held runs are read as well
 * (see the script), a slower path taken by a restarted worker. A holder found gone for less than the grace
 * has the liveness tell the store's listeners when the grace ends.
 */
export async function claimableIds(
  ctx: StoreContext,
  { limit, definitions, reclaimOwner, now }: ClaimableOptions,
): Promise<string[]> {
  if (definitions.length === 0 || limit <= 0) return [];
  const wanted = definitions.flatMap((d) => [d.kind, d.name]);
  const { liveness } = ctx;
  const perBucket = await Promise.all(
    Array.from({ length: bucketCount }, async (_, bucket) => {
      const [entries, wake] = (await ctx.gate.script(
        'find claimable runs',
        claimableRuns,
        [
          ctx.keys.claimable(bucket),
          ctx.keys.waits(bucket),
          ctx.keys.live(bucket),
          ctx.keys.held(bucket),
        ],
        [
          ctx.keys.runKeyPrefix(bucket, 'run'),
          ctx.keys.runKeyPrefix(bucket, 'lease'),
          String(Math.ceil(limit)),
          reclaimOwner ?? '',
          clockArg(now),
          liveness?.grace() ?? '',
          liveness?.instance ?? '',
          ...wanted,
        ],
      )) as [unknown, number | null];
      if (typeof wake === 'number') liveness?.takeoverIn(wake);
      return scoredEntries(entries);
    }),
  );
  return perBucket
    .flat()
    .sort((a, b) => a.score - b.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit)
    .map((entry) => entry.id);
}
