import { definePlanner, defineTool, memoryStore, type DurableStore } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { z } from 'zod';
import type { BenchContext } from '../context.js';
import type { Metric, Row } from '../report.js';
import { figure, now, repeat } from '../stats.js';

/** Nodes run at once, and chains of the plan (node i waits for node i - chains and uses its output). */
const chains = 4;

/**
 * A planner whose scripted planning model answers a plan of `size` nodes in four chains: each node's input
 * refers to the output of the node four before it, its one dependency. The tool adds two numbers at once.
 */
function chainsPlanner(size: number, store: DurableStore) {
  const nodes = Array.from({ length: size }, (_, i) => ({
    id: `n${i}`,
    capability: 'add',
    input: i >= chains ? { i, prev: { $ref: `n${i - chains}.total` } } : { i, prev: 0 },
    dependsOn: i >= chains ? [`n${i - chains}`] : [],
  }));
  const add = defineTool({
    name: 'add',
    description: 'Adds its index to the total so far.',
    input: z.object({ i: z.number().int(), prev: z.number().int() }),
    idempotent: true,
    execute: ({ i, prev }) => ({ total: prev + i }),
  });
  return definePlanner({
    name: `chains-${size}`,
    model: scriptedModel([{ text: JSON.stringify({ nodes }) }], { recordCalls: false }),
    capabilities: [{ name: 'add', description: 'Add.', executable: add }],
    maxParallel: chains,
    durable: { store },
  });
}

interface PlannerRep {
  /** Whole run time (planning answer, validation, every node, the end) over the nodes. */
  msPerNode: number;
  checkpoints: number;
}

/** One run of a plan of `size` nodes on a fresh memory store. */
async function planRun(size: number): Promise<PlannerRep> {
  const store = memoryStore();
  let checkpoints = 0;
  const counted: DurableStore = {
    ...store,
    save: (fence, checkpoint) => {
      checkpoints += 1;
      return store.save(fence, checkpoint);
    },
  };
  const started = now();
  const result = await chainsPlanner(size, counted).execute('add it all up');
  const elapsed = now() - started;
  if (result.nodes.length !== size) throw new Error(`${result.nodes.length} of ${size} nodes ran`);
  return { msPerNode: elapsed / size, checkpoints };
}

/**
 * Row 11: a planner's cost per node as its plan grows, on the memory store (no I/O: what is left is Cairn's own
 * work per node, which must not grow with the plan). Each size runs `reps` times after a warm-up run.
 */
export async function plannerRow(ctx: BenchContext): Promise<Row> {
  const { reps, planner } = ctx.config;
  const sizes = [...planner.sizes].sort((a, b) => a - b);
  const smallest = sizes[0]!;
  const largest = sizes.at(-1)!;
  ctx.log(`planner: plans of ${sizes.join(', ')} nodes on the memory store x${reps}`);
  await planRun(smallest);
  const bySize = new Map<number, PlannerRep[]>();
  for (const size of sizes) bySize.set(size, await repeat(reps, () => planRun(size)));
  const perNode = (size: number) => bySize.get(size)!.map((rep) => rep.msPerNode);
  const metrics: Metric[] = sizes.map((size) => ({
    key: `n${size}.ms_per_node`,
    label: `${size.toLocaleString('en-US')} nodes: ms per node (whole run / nodes)`,
    unit: 'ms',
    figure: figure(perNode(size)),
  }));
  metrics.push({
    key: 'largest_over_smallest',
    label: `ms per node at ${largest.toLocaleString('en-US')} / at ${smallest.toLocaleString('en-US')} nodes`,
    unit: 'x',
    figure: figure(perNode(largest).map((ms, rep) => ms / perNode(smallest)[rep]!)),
  });
  return {
    key: 'planner',
    title: `11. Planner: per-node cost at ${sizes.map((size) => size.toLocaleString('en-US')).join(', ')} nodes on the memory store`,
    metrics,
    notes: [
      `a plan of ${chains} chains (each node refers to the output of the node ${chains} before it), ${chains} nodes at once, an idempotent tool that answers at once`,
      `checkpoints per run: ${sizes.map((size) => `${size}: ${bySize.get(size)![0]?.checkpoints ?? '-'}`).join(', ')} (every settled node of a small plan; a 16th of the plan and ledger apart in a large one)`,
    ],
  };
}
