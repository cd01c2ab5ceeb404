import { pgStore } from '@cairn/store-pg';
import type { Sql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { usePgHarness, watchedSql } from './support.js';

const opened = usePgHarness('cairn_wait_plans');
const definitions = [{ kind: 'agent', name: 'sleeper' }];

/** The names of the indexes a plan (EXPLAIN's JSON) reads, and whether it scans `runs` whole. */
function scans(plan: unknown): { indexes: Set<string>; seqScanOfRuns: boolean } {
  const indexes = new Set<string>();
  let seqScanOfRuns = false;
  const visit = (node: Record<string, unknown>) => {
    if (typeof node['Index Name'] === 'string') indexes.add(node['Index Name']);
    if (node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'runs') seqScanOfRuns = true;
    for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? [])
      visit(child);
  };
  visit((plan as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
  return { indexes, seqScanOfRuns };
}

/** The plan Postgres picks for the last statement `run` sent that matches `pattern`. */
async function planOf(
  sql: Sql,
  schema: string,
  pattern: RegExp,
  run: (store: ReturnType<typeof pgStore>) => Promise<unknown>,
) {
  let statement: { text: string; params: readonly unknown[] } | undefined;
  const store = pgStore({
    sql: watchedSql(sql, (text, params) => {
      if (pattern.test(text)) statement = { text, params };
    }),
    schema,
    liveness: 'lease',
  });
  try {
    await run(store);
  } finally {
    await store.close();
  }
  const rows = await sql.unsafe(
    `EXPLAIN (FORMAT JSON) ${statement!.text}`,
    statement!.params as never[],
  );
  return scans(rows[0]!['QUERY PLAN']);
}

describe('claiming due waiting runs among many that wait', () => {
  it('reads the due ones by index, never every waiting run', async () => {
    const { sql, harness } = opened();
    const runs = `"${harness.schema}".runs`;
    // 20,000 runs waiting for later, a few due by time, one woken by a signal.
    await sql.unsafe(
      `INSERT INTO ${runs} (run_id, kind, name, signature, status, wait_until, wait_signals, woken)
       SELECT 'later-' || g, 'agent', 'sleeper', 's', 'waiting', 1e12 + g, '{go}'::text[], false
         FROM generate_series(1, 20000) g
       UNION ALL
       SELECT 'due-' || g, 'agent', 'sleeper', 's', 'waiting', g, '{go}'::text[], false FROM generate_series(1, 3) g
       UNION ALL
       SELECT 'woken', 'agent', 'sleeper', 's', 'waiting', NULL, '{go}'::text[], true`,
    );
    await sql.unsafe(`ANALYZE ${runs}`);
    const now = 1_000;

    const hint = await planOf(sql, harness.schema, /candidates AS/, (store) =>
      store.claimable({ limit: 10, definitions, now }),
    );
    expect(hint.indexes).toContain('runs_wait_until_idx');
    expect(hint.indexes).toContain('runs_woken_idx');
    expect(hint.seqScanOfRuns).toBe(false);

    const wake = await planOf(sql, harness.schema, /ORDER BY r\.wait_until LIMIT 1/, (store) =>
      store.nextWake(definitions),
    );
    expect(wake.indexes).toContain('runs_wait_until_idx');
    expect(wake.seqScanOfRuns).toBe(false);

    // And what they pick is the due ones only.
    const store = harness.store();
    expect((await store.claimable({ limit: 10, definitions, now })).sort()).toEqual(
      ['due-1', 'due-2', 'due-3', 'woken'].sort(),
    );
    expect(await store.nextWake(definitions)).toBe(1);

    // Last, since this claim takes them.
    let claimed: string[] = [];
    const claim = await planOf(sql, harness.schema, /claimed AS/, (store) =>
      store.claim!({ owner: 'w', ttlMs: 60_000, limit: 10, definitions, now }).then(
        (leases) => (claimed = leases.map((lease) => lease.runId)),
      ),
    );
    expect(claim.indexes).toContain('runs_wait_until_idx');
    expect(claim.indexes).toContain('runs_woken_idx');
    expect(claim.seqScanOfRuns).toBe(false);

    expect(claimed.sort()).toEqual(['due-1', 'due-2', 'due-3', 'woken'].sort());
  });
});
