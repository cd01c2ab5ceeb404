import { describe, expect, it } from 'vitest';
import { checkpointDue, checkpointStride, PlanProgress } from './plan-progress.js';
import type { FrozenPlan, LedgerEntry } from './planner-state.js';

/** A deterministic pseudo-random sequence (a linear congruential generator) from `seed`. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

/** A DAG of `size` nodes: each depends on up to three earlier ones, some of them twice. */
function randomPlan(size: number, next: () => number): FrozenPlan {
  const nodes = Array.from({ length: size }, (_, i) => {
    const dependsOn =
      i === 0
        ? []
        : Array.from({ length: Math.floor(next() * 4) }, () => `n${Math.floor(next() * i)}`);
    return { id: `n${i}`, capability: 'c', input: null, dependsOn };
  });
  return { revision: 0, nodes };
}

describe('PlanProgress', () => {
  for (const seed of [1, 7, 42, 1_000]) {
    it(`followed node by node hands out what one built from the state would (seed ${seed})`, () => {
      const next = random(seed);
      const plan = randomPlan(200, next);
      let ledger: LedgerEntry[] = [];
      let running: string[] = [];
      const kept = new PlanProgress(plan, { ledger, running });
      for (let turn = 0; kept.remaining > 0; turn += 1) {
        expect(turn, `seed ${seed}`).toBeLessThan(1_000);
        const fresh = new PlanProgress(plan, { ledger, running });
        const slots = 1 + Math.floor(next() * 4) - running.length;
        const started = kept.take(Math.max(0, slots));
        expect(
          started.map((node) => node.id),
          `seed ${seed}, turn ${turn}`,
        ).toEqual(fresh.take(Math.max(0, slots)).map((node) => node.id));
        running = [...running, ...started.map((node) => node.id)];
        // One running node, picked at random, settles.
        const settling = running[Math.floor(next() * running.length)];
        if (settling === undefined) break;
        running = running.filter((id) => id !== settling);
        ledger = [
          ...ledger,
          { id: settling, capability: 'c', revision: 0, status: 'completed', output: turn },
        ];
        expect(kept.follow(plan, ledger)).toBe(true);
        expect(kept.outputs).toEqual(new PlanProgress(plan, { ledger, running }).outputs);
      }
      expect(kept.remaining).toBe(0);
      expect(ledger.map((entry) => entry.id).sort()).toEqual(
        plan.nodes.map((node) => node.id).sort(),
      );
    });
  }

  it('does not follow a ledger that does not continue the one it knows, nor another plan', () => {
    const plan = randomPlan(10, random(3));
    const entry = (id: string): LedgerEntry => ({
      id,
      capability: 'c',
      revision: 0,
      status: 'completed',
    });
    const first = [entry('n0')];
    const progress = new PlanProgress(plan, { ledger: first, running: [] });
    expect(progress.follow(plan, [entry('n0'), entry('n1')])).toBe(false);
    expect(progress.follow({ ...plan }, first)).toBe(false);
    expect(progress.follow(plan, [...first, entry('n1')])).toBe(true);
  });

  it('counts the failures of its own revision only', () => {
    const plan: FrozenPlan = {
      revision: 1,
      nodes: [{ id: 'b', capability: 'c', input: null, dependsOn: ['a'] }],
    };
    const progress = new PlanProgress(plan, {
      ledger: [
        { id: 'x', capability: 'c', revision: 0, status: 'failed' },
        { id: 'a', capability: 'c', revision: 0, status: 'completed', output: 1 },
      ],
      running: [],
    });
    expect(progress.failures).toEqual([]);
    expect(progress.take(5).map((node) => node.id)).toEqual(['b']);
  });
});

describe('checkpoints of a plan', () => {
  it('follow every settled node of a plan of up to 16 nodes, and every 16th of plan and ledger after', () => {
    const checkpointsOf = (planNodes: number) =>
      Array.from({ length: planNodes }, (_, settled) =>
        checkpointDue(planNodes, settled, settled + 1),
      ).filter(Boolean).length;
    expect(checkpointsOf(16)).toBe(16);
    expect(checkpointsOf(17)).toBeLessThan(17);
    expect(checkpointStride(10_000, 0)).toBe(625);
    expect(checkpointStride(10_000, 10_000)).toBe(1_250);
    // However large the plan, about as many checkpoints over its run.
    expect(checkpointsOf(100)).toBeGreaterThanOrEqual(11);
    expect(checkpointsOf(100)).toBeLessThanOrEqual(16);
    expect(checkpointsOf(10_000)).toBeGreaterThanOrEqual(11);
    expect(checkpointsOf(10_000)).toBeLessThanOrEqual(16);
  });
});
