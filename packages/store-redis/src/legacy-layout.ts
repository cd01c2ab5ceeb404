import { CairnError } from '@cairn/sdk';
import { runScript, type StoreContext } from './context.js';
import { allStatuses, type RunKeys } from './keys.js';
import { readLegacyRun } from './lua/read-legacy-run.js';
import { writeMigratedRun } from './lua/write-migrated-run.js';
import { hashFields } from './record.js';

// The key layout before buckets (0.1.x after incarnations): a run's keys under the hash tag of its escaped id,
// and one global sorted set per status, `<prefix>:index:<status>`, scored by creation order.

/** The hash tag a run had before buckets: its id with `%`, `{` and `}` escaped, `%` for the empty id. */
function legacyTag(runId: string): string {
  if (runId === '') return '%';
  return runId.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A run's keys before buckets: that layout had no mailboxes and no streams. */
type LegacyRunKeys = Omit<RunKeys, 'mailbox' | 'stream'>;

function legacyRunKeys(prefix: string, runId: string): LegacyRunKeys {
  const base = `${prefix}:{${legacyTag(runId)}}`;
  return {
    run: `${base}:run`,
    journal: `${base}:journal`,
    lease: `${base}:lease`,
    children: `${base}:children`,
  };
}

const legacyIndexes = (prefix: string) => allStatuses.map((status) => `${prefix}:index:${status}`);

/** `SCHEMA_MISMATCH` for a prefix that still holds runs in the layout before buckets. */
export function legacyLayoutError(prefix: string): CairnError {
  return new CairnError(
    'SCHEMA_MISMATCH',
    `The Redis prefix "${prefix}" holds runs in the key layout of @cairn/store-redis before buckets, which this ` +
      'version does not read. Stop every worker, then run `await store.migrateKeyLayout()` once (it is safe to ' +
      'run again after a crash).',
    { data: { prefix, run: 'store.migrateKeyLayout()' } },
  );
}

/** True when any global status index of the layout before buckets exists under the prefix. */
export async function holdsLegacyLayout(ctx: StoreContext): Promise<boolean> {
  const found = await Promise.all(
    legacyIndexes(ctx.keys.prefix).map((key) =>
      ctx.gate.call('look for runs in the old key layout', (client) => client.exists(key)),
    ),
  );
  return found.some((count) => count > 0);
}

/**
 * Moves one run from the layout before buckets to its bucket, in steps each safe to repeat: write the new keys
 * (skipped when an earlier pass wrote them), delete the old ones, then drop its old index entries. A crash
 * between two steps leaves the run findable through the old indexes, and the next pass finishes it.
 */
async function migrateRun(ctx: StoreContext, runId: string): Promise<boolean> {
  const old = legacyRunKeys(ctx.keys.prefix, runId);
  const read = (await ctx.gate.script(
    'read a run in the old key layout',
    readLegacyRun,
    Object.values(old),
    [],
  )) as unknown[];
  let moved = false;
  if (read[0] === 'ok') {
    const [, hash, ttl, journal, token, leaseTtl, children] = read;
    const fields = hashFields(hash);
    if (!fields.has('incarnation')) {
      throw new CairnError(
        'SCHEMA_MISMATCH',
        `Run "${runId}" was stored by @cairn/store-redis 0.1.0 (no incarnation), which cannot be migrated: let it ` +
          'finish or delete it with that version, then migrate.',
        {
          data: {
            prefix: ctx.keys.prefix,
            runId,
            run: 'drain the run with @cairn/store-redis 0.1.0',
          },
        },
      );
    }
    const entries = Array.isArray(journal) ? journal.map(String) : [];
    const reply = await runScript(ctx, 'write a migrated run', writeMigratedRun, runId, [
      String(ttl),
      String(token),
      String(leaseTtl),
      String(fields.size),
      ...[...fields].flat(),
      String(entries.length / 2),
      ...entries,
      ...(Array.isArray(children) ? children.map(String) : []),
    ]);
    moved = reply[0] === 'written';
    await ctx.gate.call('delete a run in the old key layout', (client) =>
      client.del(...Object.values(old)),
    );
  }
  await Promise.all(
    legacyIndexes(ctx.keys.prefix).map((key) =>
      ctx.gate.call('drop an old index entry', (client) => client.zrem(key, runId)),
    ),
  );
  return moved;
}

/**
 * Moves every run the old global indexes name (and `runIds`, for a run a lost index step left out of them)
 * to the bucketed layout, a page of each index at a time. Meant to run while no worker runs; idempotent and
 * resumable. Returns how many runs were written in the new layout.
 */
export async function migrateKeyLayout(
  ctx: StoreContext,
  pageSize: number,
  runIds: Iterable<string> = [],
): Promise<number> {
  let migrated = 0;
  const count = (moved: boolean[]) => (migrated += moved.filter(Boolean).length);
  const extra = [...runIds];
  for (let i = 0; i < extra.length; i += pageSize)
    count(await Promise.all(extra.slice(i, i + pageSize).map((id) => migrateRun(ctx, id))));
  for (const index of legacyIndexes(ctx.keys.prefix)) {
    // Each run migrated leaves the index, so the first page is always the next one.
    for (;;) {
      const ids = await ctx.gate.call('read an old status index', (client) =>
        client.zrange(index, 0, String(pageSize - 1)),
      );
      if (ids.length === 0) break;
      count(await Promise.all(ids.map((id) => migrateRun(ctx, id))));
    }
  }
  return migrated;
}
