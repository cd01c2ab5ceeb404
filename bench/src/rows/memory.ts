import { createClient } from '@cairn/worker';
import { benchAgent } from '../agents.js';
import type { BenchContext } from '../context.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import { ChildScript, type Line } from '../processes/child.js';
import type { Row } from '../report.js';
import { figure, repeat } from '../stats.js';

interface MemoryRep {
  idleRss: number;
  loadedRss: number;
  idleHeap: number;
  loadedHeap: number;
}

/**
 * Row 10: a worker process's RSS with `runs` runs in flight, each waiting in a tool on a timer, against the
 * same process idle. The worker runs with --expose-gc and collects before each reading.
 */
export async function memoryRow(ctx: BenchContext): Promise<Row> {
  const { reps, memory } = ctx.config;
  const name = 'memory';
  ctx.log(`memory: ${memory.runs} runs in flight in one worker process x${reps}`);
  const results = await repeat(reps, async (rep): Promise<MemoryRep> => {
    const schema = freshSchema('bench_memory');
    await migrateSchema(ctx, schema);
    const { store, close } = openStore(ctx, schema, 10);
    const worker = new ChildScript(
      'worker-process.ts',
      {
        DATABASE_URL: ctx.url,
        CAIRN_SCHEMA: schema,
        OWNER: `memory-${rep}`,
        AGENT_NAME: name,
        TRIPS: '1',
        TOOL_WAIT_MS: '600000',
        CONCURRENCY: String(memory.runs),
        MEMORY_REPORT_MS: '500',
      },
      ['--expose-gc'],
    );
    try {
      const reports = () => worker.lines.filter((l) => l.kind === 'memory');
      // Idle: the third report after start, once the process has loaded everything it loads at start.
      await worker.waitUntil(() => reports().length >= 3);
      const idle = reports().at(-1)!;
      const client = createClient({ store });
      const agent = benchAgent({ name, trips: 1 });
      await Promise.all(Array.from({ length: memory.runs }, () => client.start(agent, 'go')));
      const full = (l: Line) => l.kind === 'memory' && l.active === memory.runs;
      const first = await worker.waitFor(full, 300_000);
      // Two more full reports, so every run is inside its tool and the heap has settled.
      await worker.waitUntil(
        () => worker.lines.filter(full).length >= 3 && worker.lines.at(-1) !== first,
      );
      const loaded = worker.lines.filter(full).at(-1)!;
      return {
        idleRss: idle.rss as number,
        loadedRss: loaded.rss as number,
        idleHeap: idle.heapUsed as number,
        loadedHeap: loaded.heapUsed as number,
      };
    } finally {
      worker.kill('SIGKILL');
      await worker.exited;
      await close();
      await dropSchema(ctx, schema);
    }
  });
  const MiB = 2 ** 20;
  return {
    key: 'memory',
    title: `10. Memory: one worker process with ${memory.runs} runs in flight (each waiting in a tool on a timer)`,
    metrics: [
      {
        key: 'idle_rss_mib',
        label: 'worker RSS, idle',
        unit: 'MiB',
        figure: figure(results.map((r) => r.idleRss / MiB)),
      },
      {
        key: 'loaded_rss_mib',
        label: `worker RSS, ${memory.runs} runs in flight`,
        unit: 'MiB',
        figure: figure(results.map((r) => r.loadedRss / MiB)),
      },
      {
        key: 'rss_per_run_kib',
        label: 'RSS per run in flight ((loaded - idle) / runs)',
        unit: 'KiB',
        figure: figure(results.map((r) => (r.loadedRss - r.idleRss) / memory.runs / 1024)),
      },
      {
        key: 'heap_per_run_kib',
        label: 'JS heap per run in flight',
        unit: 'KiB',
        figure: figure(results.map((r) => (r.loadedHeap - r.idleHeap) / memory.runs / 1024)),
      },
    ],
    notes: [
      `worker concurrency ${memory.runs}, postgres pool max 10, lease 30 s; readings after a forced GC`,
    ],
  };
}
