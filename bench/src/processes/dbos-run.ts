/**
 * One DBOS Transact process for the bench. Configured by environment variables; prints one JSON line with
 * its timings and exits.
 *   DBOS_SYSTEM_DATABASE_URL, MODE (sequential | concurrent | idle), WORKFLOWS, STEPS, POOL_SIZE, WARMUP
 * `idle` launches, warms up and shuts down: the baseline the parent subtracts from the others' costs.
 */
import { DBOS } from '@dbos-inc/dbos-sdk';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const mode = env('MODE');
const workflows = Number(env('WORKFLOWS', '0'));
const steps = Number(env('STEPS', '10'));
const warmup = Number(env('WARMUP', '5'));

DBOS.setConfig({
  name: 'cairn-bench',
  systemDatabaseUrl: env('DBOS_SYSTEM_DATABASE_URL'),
  systemDatabasePoolSize: Number(env('POOL_SIZE', '10')),
  logLevel: 'error',
});

const stepTimes: number[] = [];
const workflow = DBOS.registerWorkflow(
  async (n: number): Promise<number> => {
    let sum = 0;
    for (let i = 0; i < steps; i += 1) {
      const t0 = performance.now();
      sum += await DBOS.runStep(async () => Promise.resolve(i), { name: `step${i}` });
      stepTimes.push(performance.now() - t0);
    }
    return sum + n;
  },
  { name: 'benchWorkflow' },
);

await DBOS.launch();
for (let i = 0; i < warmup; i += 1) await workflow(-1 - i);
stepTimes.length = 0;

let elapsed = 0;
const started = performance.now();
if (mode === 'sequential') {
  for (let i = 0; i < workflows; i += 1) await workflow(i);
} else if (mode === 'concurrent') {
  const handles = await Promise.all(
    Array.from({ length: workflows }, (_, i) => DBOS.startWorkflow(workflow)(i)),
  );
  await Promise.all(handles.map((handle) => handle.getResult()));
} else if (mode !== 'idle') {
  throw new Error(`unknown MODE ${mode}`);
}
elapsed = performance.now() - started;
process.stdout.write(
  `${JSON.stringify({ kind: 'result', mode, workflows, steps, elapsed, stepTimes })}\n`,
);
await DBOS.shutdown();
process.exit(0);
