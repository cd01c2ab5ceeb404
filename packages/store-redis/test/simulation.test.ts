import { itKeepsInvariants, type SimulationBackend } from '@cairn/testing';
// The test reaches into the key layout to do what only time would: let a frozen holder's lease run out.
import { bucketOf, keySpace } from '../src/keys.js';
import { indexMismatches, livenessMismatches } from './index-placement.js';
import { createRedisHarness, skippedBecause, unreachable } from './support.js';

const reason = await unreachable();

/** Redis under simulation: a key prefix per schedule, a client per process, leases run out by the oracle. */
function redisSimulation(): SimulationBackend {
  return {
    name: 'redis',
    async open() {
      const harness = await createRedisHarness('simulation');
      const keys = keySpace(harness.prefix);
      const admin = await harness.store();
      return {
        connect: () => harness.store(),
        async expireLeases(owners) {
          const [seconds] = await harness.admin.time();
          const past = Number(seconds) * 1000 - 1;
          for (const run of await admin.list()) {
            if (run.rootRunId !== null || run.owner === null || !owners.includes(run.owner))
              continue;
            const runKeys = keys.run(run.runId);
            // Gone now, as an expired key is: a claim (or the drain's check of what is claimable) made right
            // after must not find it, which a 1 ms expiry left to the wall clock.
            await harness.admin.del(runKeys.lease);
            await harness.admin.hset(runKeys.run, 'leaseUntil', String(past));
            // What time would do to the claimable set too (a run in it is scored by its lease's end).
            await harness.admin.zadd(
              keys.claimable(bucketOf(run.runId)),
              'XX',
              past * 1000,
              run.runId,
            );
          }
        },
        // A dead process's store lives on in this test's process and keeps renewing its liveness: its leases
        // run out with time, as the oracle says.
        disconnect: async () => undefined,
        // Whatever the schedule crashed, froze or retried, every run is exactly where its hash says, and so
        // is every holder's liveness.
        check: async () => [
          ...(await indexMismatches(harness.admin, keys)),
          ...(await livenessMismatches(harness.admin, keys)),
        ],
        close: () => harness.close(),
      };
    },
  };
}

if (reason === undefined) {
  itKeepsInvariants(redisSimulation(), { schedules: 60, parallel: 4, msPerSchedule: 4_000 });
} else {
  skippedBecause(reason);
}
