import { RunNotFoundError } from '../errors.js';
import type { RunFilter, RunRecord, SnapshotStore } from './contract.js';

/**
 * Every run `filter` matches, a page of `pageSize` at a time (`RunFilter.after`), oldest first: how a command
 * walks 100,000 runs without holding them at once. Runs deleted meanwhile (a prune, a forget) are no trouble: a
 * page's last run deleted before the next page is read is stepped over by the run before it, and with every run
 * of the page gone the listing starts again from the first run, so a run may be seen twice but none is missed.
 */
export async function* listPages(
  store: Pick<SnapshotStore, 'list'>,
  filter: Omit<RunFilter, 'limit' | 'after'> = {},
  pageSize = 500,
): AsyncGenerator<RunRecord[]> {
  let previous: RunRecord[] = [];
  for (;;) {
    let page: RunRecord[] | undefined;
    for (let i = previous.length - 1; page === undefined; i -= 1) {
      const after = i >= 0 ? previous[i]!.runId : undefined;
      try {
        page = await store.list({
          ...filter,
          limit: pageSize,
          ...(after === undefined ? {} : { after }),
        });
      } catch (error) {
        if (!(error instanceof RunNotFoundError) || after === undefined) throw error;
      }
    }
    if (page.length === 0) return;
    yield page;
    previous = page;
  }
}
