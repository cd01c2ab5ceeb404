import {
  defineAgent,
  memoryStore,
  type Boundary,
  type BoundaryHook,
  type PruneOptions,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';

// Type-level friction a new user met (issue 15, point 6); `pnpm typecheck` checks this file.
describe('types a user writes against', () => {
  it('a boundary hook may be a one-line arrow that returns a value', async () => {
    expectTypeOf<(boundary: Boundary) => number>().toExtend<BoundaryHook>();
    const seen: Boundary[] = [];
    const agent = defineAgent({
      name: 'hooked',
      model: scriptedModel([{ text: 'hi' }]),
      durable: { store: memoryStore() },
    });
    await agent.execute('go', { onBoundary: (boundary) => seen.push(boundary) });
    expect(seen.map((boundary) => boundary.point)).toContain('checkpoint.after');
  });

  it('a boundary names the marks a journal write carries as started:<id> or settled:<id>', () => {
    expectTypeOf<Boundary['entries']>().toEqualTypeOf<readonly string[] | undefined>();
  });

  it('prune takes any status, the final ones by default', () => {
    expectTypeOf<{ olderThan: number; status: 'dead_lettered' }>().toExtend<PruneOptions>();
  });
});
