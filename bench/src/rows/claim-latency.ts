import { createClient, createWorker } from '@cairn/worker';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { latencyStore } from '../latency-store.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import type { Metric, Row } from '../report.js';
import { figure, now, quantile, repeat } from '../stats.js';

interface ClaimRep {
  runsPerSecond: number;
  claims: number[];
  claimed: number[];
  finalSaves: number[];
  releasesAfterFinal: number[];
  /** The releases of the hand-over: one statement's worth each, shared with the others in flight. */
  handOverReleases: number[];
}

/** A condition on counters the worker's events move: `poke` after each move, `wait` for it to hold. */
function condition(ready: () => boolean) {
  const waiters = new Set<() => void>();
  return {
    poke() {
      if (ready()) for (const wake of waiters) wake();
    },
    wait(timeoutMs: number, what: string): Promise<void> {
      if (ready()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        const wake = () => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve();
        };
        waiters.add(wake);
      });
    },
  };
}

/**
 * One repetition. First a drain: `runs` queued runs of `trips` trips through one in-process worker at
 * `concurrency`, every claim and release timed as the worker makes it. Then a hand-over: `concurrency` runs
 * held in their first tool call while the worker closes, so each gives its lease up with a release of its own.
 */
async function measureClaims(
  ctx: BenchContext,
  options: { runs: number; trips: number; concurrency: number; poolMax: number },
): Promise<ClaimRep> {
  const schema = freshSchema('bench_claims');
  await migrateSchema(ctx, schema);
  const opened = openStore(ctx, schema, options.poolMax);
  const { store, latencies } = latencyStore(opened.store);
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let completed = 0;
  let inTool = 0;
  const failures: string[] = [];
  const drained = condition(() => completed + failures.length >= options.runs);
  const held = condition(() => inTool >= options.concurrency);
  const agent = benchAgent({ name: 'claims', trips: options.trips });
  const holding = benchAgent({
    name: 'hand-over',
    trips: options.trips,
    holdFirst: gate,
    onToolRun: () => {
      inTool += 1;
      held.poke();
    },
  });
  const worker = createWorker({
    store,
    agents: [agent, holding],
    concurrency: options.concurrency,
    shutdownSignals: [],
    onEvent: (event) => {
      if (event.type === 'completed') completed += 1;
      else if (event.type === 'failed' || event.type === 'dead_lettered')
        failures.push(`${event.runId}: ${event.message}`);
      else return;
      drained.poke();
    },
  });
  try {
    const client = createClient({ store: opened.store });
    await Promise.all(Array.from({ length: options.runs }, () => client.start(agent, 'go')));
    const started = now();
    await worker.start();
    await drained.wait(600_000, 'the drain');
    const elapsed = now() - started;
    if (failures.length > 0) throw new Error(`runs failed: ${failures.slice(0, 3).join('; ')}`);
    const drain = {
      claims: [...latencies.claims],
      claimed: [...latencies.claimed],
      finalSaves: [...latencies.finalSaves],
      releasesAfterFinal: [...latencies.releasesAfterFinal],
    };
    await Promise.all(
      Array.from({ length: options.concurrency }, () => client.start(holding, 'go')),
    );
    await held.wait(120_000, `${options.concurrency} runs in their tool`);
    const closing = worker.close();
    open();
    await closing;
    return {
      runsPerSecond: (options.runs * 1000) / elapsed,
      ...drain,
      handOverReleases: [...latencies.releases],
    };
  } finally {
    open();
    await worker.close();
    await opened.close();
    await dropSchema(ctx, schema);
  }
}

/** Row 5: claim and release latency as a worker at concurrency 250 makes them, through a timing store. */
export async function claimLatencyRow(ctx: BenchContext): Promise<Row> {
  const { reps, claimLatency } = ctx.config;
  const { runs, trips, concurrency } = claimLatency;
  ctx.log(
    `claims: ${runs} queued runs of ${trips} trips, worker concurrency ${concurrency} x${reps}`,
  );
  const results = await repeat(reps, () => measureClaims(ctx, claimLatency));
  const percentile = (
    key: string,
    label: string,
    samples: (r: ClaimRep) => number[],
    q: number,
  ): Metric => ({
    key,
    label,
    unit: 'ms',
    figure: figure(results.map((r) => quantile(samples(r), q))),
  });
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  return {
    key: 'claim_latency',
    title: `5. Claim latency under load: ${runs} queued runs of ${trips} trips through one in-process worker at concurrency ${concurrency}`,
    metrics: [
      {
        key: 'runs_per_s',
        label: 'runs/s while the claims were timed',
        unit: '/s',
        figure: figure(results.map((r) => r.runsPerSecond)),
      },
      percentile('claim.p50_ms', 'claim (store.claim, one statement): p50', (r) => r.claims, 0.5),
      percentile('claim.p99_ms', 'claim: p99', (r) => r.claims, 0.99),
      {
        key: 'claim.runs_per_claim',
        label: 'runs per claim (mean)',
        unit: '',
        figure: figure(results.map((r) => mean(r.claimed))),
      },
      percentile(
        'final_save.p50_ms',
        'final checkpoint, which gives the lease up: p50',
        (r) => r.finalSaves,
        0.5,
      ),
      percentile('final_save.p99_ms', 'final checkpoint: p99', (r) => r.finalSaves, 0.99),
      percentile(
        'release_after_final.p99_ms',
        'release after the final checkpoint (nothing to send): p99',
        (r) => r.releasesAfterFinal,
        0.99,
      ),
      percentile(
        'release.p50_ms',
        `release of a run handed over (${concurrency} at once): p50`,
        (r) => r.handOverReleases,
        0.5,
      ),
      percentile(
        'release.p99_ms',
        'release of a run handed over: p99',
        (r) => r.handOverReleases,
        0.99,
      ),
    ],
    notes: [
      `timed around the store calls the worker makes (a wrapper store), postgres pool max ${claimLatency.poolMax}: a claim is one statement that claims up to the free slots; claims per repetition: ${results.map((r) => r.claims.length).join(', ')}`,
      `the hand-over: ${concurrency} runs held in their first tool call while the worker closes; each then releases its lease with a statement shared with the releases in flight (${results.map((r) => r.handOverReleases.length).join(', ')} releases)`,
    ],
  };
}
