import { describe, expect, it } from 'vitest';
import { listPages } from './list-pages.js';
import { memoryStore } from './memory-store.js';

async function storeWith(count: number) {
  const store = memoryStore();
  const ids = Array.from({ length: count }, (_, i) => `run-${String(i).padStart(3, '0')}`);
  for (const runId of ids) {
    await store.create({ runId, kind: 'agent', name: 'paged', signature: 's', snapshot: null });
  }
  return { store, ids };
}

describe('listPages', () => {
  it('reads every run once, a page at a time, in creation order', async () => {
    const { store, ids } = await storeWith(10);
    const pages: string[][] = [];
    for await (const page of listPages(store, { name: 'paged' }, 3))
      pages.push(page.map((run) => run.runId));
    expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1]);
    expect(pages.flat()).toEqual(ids);
  });

  it('misses no run when the runs it paged by are deleted before the next page', async () => {
    const { store, ids } = await storeWith(10);
    const seen = new Set<string>();
    for await (const page of listPages(store, {}, 3)) {
      for (const run of page) seen.add(run.runId);
      // The page's last run goes, then the whole page: the listing steps back, then starts over.
      await store.delete(page.at(-1)!.runId);
      if (seen.size === 6) for (const run of page) await store.delete(run.runId);
    }
    expect([...seen].sort()).toEqual(ids);
  });
});
