import { isCairnError } from '@cairn/sdk';
import type { Schedule } from './schedule.js';

/** What `client.cancel` does: flag it, and cancel it at once under a lease of its own when nobody holds it. */
export async function clientCancel(s: Schedule, runId: string): Promise<string> {
  const store = s.client.store;
  try {
    if (!(await store.requestCancel(runId))) return 'finished';
    const lease = await store.acquire(runId, { owner: 'client', ttlMs: 10_000 });
    if (lease === undefined) return 'requested';
    try {
      await store.updateStatus(lease, { status: 'cancelled' });
    } finally {
      await store.release(lease);
    }
    return 'cancelled';
  } catch (error) {
    return isCairnError(error) ? error.code : String(error);
  }
}
