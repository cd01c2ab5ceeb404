import {
  definePlanner,
  defineTool,
  memoryStore,
  type DurableStore,
  type PlannerResult,
} from '@cairn/sdk';
import { exploreCrashes, observePlanner, scriptedModel } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A plan of `size` nodes in `chains` chains: node i adds its index to the output of node i - chains, and
 * the plan returns the sum of the last node of each chain.
 */
function chainsPlan(size: number, chains: number) {
  const nodes = Array.from({ length: size }, (_, i) => ({
    id: `n${i}`,
    capability: 'add',
    input: i >= chains ? { i, prev: { $ref: `n${i - chains}.total` } } : { i, prev: 0 },
    dependsOn: i >= chains ? [`n${i - chains}`] : [],
  }));
  const last = nodes.slice(-chains).map((node) => ({ $ref: `${node.id}.total` }));
  return { nodes, output: { totals: last } };
}

/** The totals `chainsPlan` returns. */
function expectedTotals(size: number, chains: number): number[] {
  const totals = Array.from({ length: chains }, () => 0);
  for (let i = 0; i < size; i += 1) totals[i % chains] = (totals[i % chains] ?? 0) + i;
  return Array.from({ length: chains }, (_, k) => totals[(size - chains + k) % chains]!);
}

function scaleWorld(size: number, chains: number) {
  const sideEffects: Record<string, number> = {};
  const add = defineTool({
    name: 'add',
    description: 'Adds its index to the total so far.',
    input: z.object({ i: z.number().int(), prev: z.number().int() }),
    idempotent: true,
    execute: ({ i, prev }, ctx) => {
      sideEffects[ctx.toolCallId] = (sideEffects[ctx.toolCallId] ?? 0) + 1;
      return { total: prev + i };
    },
  });
  const model = scriptedModel([{ text: JSON.stringify(chainsPlan(size, chains)) }], {
    name: 'planning',
    recordCalls: false,
  });
  const capabilities = [{ name: 'add', description: 'Add.', executable: add }];
  return { sideEffects, model, capabilities };
}

/** A store that counts the JSON it is handed by checkpoints and journal appends. */
function countingBytes(store: DurableStore): { store: DurableStore; bytes: () => number } {
  let bytes = 0;
  return {
    store: {
      ...store,
      save: (fence, checkpoint) => {
        bytes += JSON.stringify(checkpoint).length;
        return store.save(fence, checkpoint);
      },
      append: (fence, entries) => {
        bytes += JSON.stringify(entries).length;
        return store.append(fence, entries);
      },
    },
    bytes: () => bytes,
  };
}

/** A store that records, for each checkpoint, the nodes whose outcome it holds (settled or carried). */
function recordingCheckpoints(store: DurableStore, checkpointed: Array<Set<string>>): DurableStore {
  return {
    ...store,
    save: async (fence, checkpoint) => {
      const receipt = await store.save(fence, checkpoint);
      const snapshot = checkpoint.snapshot as {
        state: { ledger: Array<{ id: string }> };
        carried?: Array<{ type: string; effectId: string }>;
      };
      const carried = (snapshot.carried ?? []).filter(
        (entry) => entry.type === 'settled' && entry.effectId.startsWith('node/'),
      );
      checkpointed.push(
        new Set([
          ...snapshot.state.ledger.map((entry) => entry.id),
          ...carried.map((entry) => entry.effectId.slice('node/'.length)),
        ]),
      );
      return receipt;
    },
  };
}

describe('a large plan', () => {
  it('of 10,000 nodes completes on the memory store, the store handed as many bytes per node as for 100', async () => {
    const bytesPerNode = async (size: number): Promise<number> => {
      const { model, capabilities, sideEffects } = scaleWorld(size, 4);
      const counted = countingBytes(memoryStore());
      const planner = definePlanner({
        name: 'scale',
        model,
        capabilities,
        maxParallel: 4,
        durable: { store: counted.store },
      });
      const result = await planner.execute('add it all up');
      expect(result.nodes).toHaveLength(size);
      expect(result.nodes.every((node) => node.status === 'completed')).toBe(true);
      expect(result.output).toEqual({ totals: expectedTotals(size, 4) });
      expect(Object.keys(sideEffects)).toHaveLength(size);
      return counted.bytes() / size;
    };
    const small = await bytesPerNode(100);
    const large = await bytesPerNode(10_000);
    expect(large / small).toBeLessThanOrEqual(2);
  }, 60_000);

  it('crashed at any boundary, also between checkpoints, runs no settled node again and returns the same output', async () => {
    const size = 40;
    const worlds: Array<ReturnType<typeof scaleWorld> & { checkpointed: Array<Set<string>> }> = [];
    const report = await exploreCrashes<string, PlannerResult>({
      input: 'add it all up',
      setup() {
        const world = { ...scaleWorld(size, 3), checkpointed: [] as Array<Set<string>> };
        worlds.push(world);
        return {
          create: (store, clock) =>
            definePlanner({
              name: 'scale',
              model: world.model,
              capabilities: world.capabilities,
              maxParallel: 3,
              durable: { store: recordingCheckpoints(store, world.checkpointed), clock },
            }),
          sideEffects: () => world.sideEffects,
          modelCalls: () => world.model.calls.length,
        };
      },
      observe: observePlanner,
      idempotent: () => true,
    });
    expect(report.violations).toEqual([]);
    const [baseline] = worlds;
    expect(Object.values(baseline!.sideEffects)).toEqual(Array.from({ length: size }, () => 1));

    const trace = report.cases.map((c) => c.boundary);
    // Checkpoints are amortized over a plan this long: some nodes settle between two of them.
    const running = trace.filter((b) => b.point === 'checkpoint.after' && b.status === 'running');
    expect(running.length).toBeLessThan(size / 2);
    // A node whose outcome was durable at the crash (in a checkpoint written, or a journal entry appended)
    // never ran again.
    const durable = new Set<string>();
    let checkpoints = 0;
    for (const [index, boundary] of trace.entries()) {
      if (boundary.point === 'checkpoint.after') {
        for (const id of baseline!.checkpointed[checkpoints] ?? []) durable.add(id);
        checkpoints += 1;
      }
      for (const entry of boundary.point === 'journal.after' ? (boundary.entries ?? []) : []) {
        if (entry.startsWith('settled:node/')) durable.add(entry.slice('settled:node/'.length));
      }
      const world = worlds[index + 1]!;
      for (const id of durable) {
        expect(world.sideEffects[id], `crash #${index} at ${boundary.point}: ${id}`).toBe(1);
      }
    }
    expect(checkpoints).toBe(baseline!.checkpointed.length);
  }, 60_000);
});
