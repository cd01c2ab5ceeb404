import {
  defineAgent,
  definePlanner,
  defineTool,
  type DurableStore,
  type Model,
  type ExecuteOptions,
} from '@cairn/sdk';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { SimulatedCrash } from '../crash-harness.js';
import { scriptedModel, type ScriptedTurn } from '../scripted-model.js';
import { longTtlMs, newRun, type ConformanceContext } from './context.js';

// Keys in an order no store may "normalize": not sorted by length or name, a key that looks like an index.
const args = {
  zz_longest_key_first: 'x',
  b: 1,
  mid_key: { yy_long: [1, { k: 2, a: 3 }], c: null },
  '2': 0,
};
const found = {
  title_of_the_book: 'Cairns',
  id: 7,
  tags_in_order: ['b', 'a'],
  a: { longer: 1, s: 2 },
};

/** A scripted model that keeps every request's messages as JSON text, in the order it was asked. */
function recording(turns: ScriptedTurn[], requests: string[]): Model {
  const inner = scriptedModel(turns);
  return {
    name: inner.name,
    provider: inner.provider,
    generate: (request) => {
      requests.push(JSON.stringify(request.messages));
      return inner.generate(request);
    },
  };
}

interface Runnable {
  execute(input: string, options: ExecuteOptions): Promise<unknown>;
  resume(runId: string): Promise<unknown>;
}

/** A fresh definition on `store` (a new process) with leases of `leaseMs`, and the requests its model received. */
type Make = (store: DurableStore, leaseMs: number) => { run: Runnable; requests: string[] };

/** An agent of three trips (look up, look up again, answer). */
function replayAgent(): Make {
  return (store, leaseMs) => {
    const requests: string[] = [];
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a book up.',
      input: z.object({}).passthrough(),
      idempotent: true,
      execute: () => found,
    });
    const run = defineAgent({
      name: 'replayer',
      model: recording(
        [
          { text: 'Looking.', toolCalls: [{ id: 'c1', name: 'lookup', args }] },
          { toolCalls: [{ id: 'c2', name: 'lookup', args: { ...args, b: 2 } }] },
          { text: 'Found it.' },
        ],
        requests,
      ),
      tools: [lookup],
      system: 'You find books.',
      maxTrips: 5,
      durable: { store, leaseMs },
    });
    return { run, requests };
  };
}

/** A planner whose second agent node is given the first one's output (an object) as its input. */
function replayPlanner(): Make {
  return (store, leaseMs) => {
    const requests: string[] = [];
    const finder = defineAgent({
      name: 'finder',
      model: recording([{ text: JSON.stringify(found) }], []),
      output: z.object({}).passthrough(),
    });
    const reader = defineAgent({
      name: 'reader',
      model: recording([{ text: 'A fine book.' }], requests),
    });
    const plan = {
      nodes: [
        { id: 'find', capability: 'finder', input: 'Find "Cairns".', dependsOn: [] },
        { id: 'read', capability: 'reader', input: { $ref: 'find' }, dependsOn: ['find'] },
      ],
    };
    const run = definePlanner({
      name: 'replay-planner',
      model: recording([{ text: JSON.stringify(plan) }], requests),
      capabilities: [
        { name: 'finder', description: 'Finds a book.', executable: finder },
        { name: 'reader', description: 'Reads a book.', executable: reader },
      ],
      durable: { store, leaseMs },
    });
    return { run, requests };
  };
}

/** Each request after the first starts with the bytes of the one before it (its messages, less the `]`). */
function expectEachAPrefixOfTheNext(requests: readonly string[]): void {
  for (let i = 1; i < requests.length; i += 1) {
    const previous = requests[i - 1]!;
    expect(requests[i]!.startsWith(previous.slice(0, -1) + ','), `request ${i}`).toBe(true);
  }
}

/**
 * Runs once uninterrupted, then once per boundary crashing there and resuming on another store client. Only the
 * attempt that dies holds a short lease (so it runs out at once); the others hold long ones, which a loaded
 * machine cannot lose midway.
 */
async function crashEverywhere(ctx: ConformanceContext, make: Make): Promise<string[]> {
  const uninterrupted = make(await ctx.store(), longTtlMs);
  let boundaries = 0;
  await uninterrupted.run.execute('Find "Cairns".', {
    runId: newRun().runId,
    onBoundary: () => void (boundaries += 1),
  });
  for (let crashAt = 0; crashAt < boundaries; crashAt += 1) {
    const dying = make(await ctx.store(), ctx.harness().shortTtlMs);
    const { runId } = newRun();
    let passed = 0;
    const died = await dying.run
      .execute('Find "Cairns".', {
        runId,
        onBoundary: (boundary) => {
          if (passed++ === crashAt) throw new SimulatedCrash(boundary);
        },
      })
      .catch((error: unknown) => error);
    if (!(died instanceof SimulatedCrash)) continue;
    await ctx.harness().expireLeases();
    const resumed = make(await ctx.store(), longTtlMs);
    await resumed.run.resume(runId);
    for (const request of resumed.requests) {
      expect(uninterrupted.requests, `crash at boundary ${crashAt}`).toContain(request);
    }
  }
  return uninterrupted.requests;
}

/**
 * What the model saw is replayed to it in the exact bytes it saw: a run resumed from this store after a crash
 * at any boundary sends each model exactly the messages an uninterrupted run sends, key order and all, so a
 * provider's prompt cache still matches the conversation's prefix.
 */
export function replayTests(ctx: ConformanceContext): void {
  it('replays an agent’s conversation byte for byte after a crash at any boundary', async () => {
    const requests = await crashEverywhere(ctx, replayAgent());
    expect(requests).toHaveLength(3);
    expectEachAPrefixOfTheNext(requests);
    expect(requests[1]).toContain(JSON.stringify(args));
    expect(requests[1]).toContain(JSON.stringify(found));
  });

  it('hands a planner node another node’s output in the same bytes after a crash at any boundary', async () => {
    const requests = await crashEverywhere(ctx, replayPlanner());
    expect(requests).toHaveLength(2);
    expect(requests[1]).toContain(JSON.stringify(JSON.stringify(found)));
  });
}
