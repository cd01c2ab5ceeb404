/** One demo worker process: prints its events and boundaries as JSON lines for the demo to narrate. */
import { pgStore } from '@cairn/store-pg';
import { createWorker } from '@cairn/worker';
import postgres from 'postgres';
import { demoDefinitions } from './definitions.js';

const schema = process.env.CAIRN_SCHEMA ?? 'cairn_demo';
const sql = postgres(process.env.DATABASE_URL!, { max: 4, onnotice: () => undefined });
const store = pgStore({ sql, schema });
const { travel, lisbon } = demoDefinitions(sql, schema);
const print = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

const worker = createWorker({
  store,
  agents: [travel],
  planners: [lisbon],
  owner: process.env.OWNER!,
  leaseMs: 10_000,
  pollMs: 200,
  onEvent: (event) =>
    print({ ...event, ...('kind' in event ? { runKind: event.kind } : {}), line: 'event' }),
  onBoundary: (b) => {
    print({ line: 'boundary', runId: b.runId, point: b.point, effectId: b.effectId ?? null });
  },
});
await worker.start();
print({ line: 'ready' });
process.once('SIGTERM', () => {
  void worker.close().then(async () => {
    await store.close();
    await sql.end({ timeout: 5 });
  });
});
