import { randomBytes } from 'node:crypto';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { useTestDatabase } from '@cairn/testing';
import { createClient, type CairnClient } from '@cairn/worker';
import postgres, { type Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEffectsTable, effectsOf, processAgent, unknownCalls } from './fixtures/agents.js';
import { endProcessTest, startWorkerProcess, type WorkerProcess } from './processes.js';
import { until } from './support.js';

// Worker processes connecting as two roles of their own, neither a superuser nor the schema's owner, take
// over each other's crashed runs: a holder is alive while its session's advisory lock is held, and any role
// can test that lock.
const database = useTestDatabase({ prefix: 'cairn_worker_roles' });
const suffix = randomBytes(4).toString('hex');
const roles = {
  a: { name: `cairn_worker_a_${suffix}`, password: randomBytes(8).toString('hex') },
  b: { name: `cairn_worker_b_${suffix}`, password: randomBytes(8).toString('hex') },
};
const roleNames = `"${roles.a.name}", "${roles.b.name}"`;
let sql: Sql;
let store: PgStore;
let schema: string;
let client: CairnClient;
const processes: WorkerProcess[] = [];

beforeAll(async () => {
  sql = postgres(database().url, { max: 5, onnotice: () => undefined });
  for (const role of Object.values(roles))
    await sql.unsafe(`create role "${role.name}" login password '${role.password}'`);
});
afterAll(async () => {
  if (sql === undefined) return;
  // The schemas and their grants are gone; `drop owned` drops anything else a role still owns or was granted.
  for (const role of Object.values(roles)) {
    if ((await sql`select 1 from pg_roles where rolname = ${role.name}`).length === 0) continue;
    await sql.unsafe(`drop owned by "${role.name}"`);
    await sql.unsafe(`drop role "${role.name}"`);
  }
  await sql.end({ timeout: 5 });
});
beforeEach(async () => {
  schema = `r_${randomBytes(5).toString('hex')}`;
  // Migrated by the superuser; the workers get what the store needs at run time and nothing more (no DDL).
  store = pgStore({ sql, schema });
  await store.migrate();
  await createEffectsTable(sql, schema);
  await sql.unsafe(`grant usage on schema "${schema}" to ${roleNames}`);
  await sql.unsafe(
    `grant select, insert, update, delete on all tables in schema "${schema}" to ${roleNames}`,
  );
  await sql.unsafe(`grant usage on all sequences in schema "${schema}" to ${roleNames}`);
  await sql.unsafe(`grant execute on all functions in schema "${schema}" to ${roleNames}`);
  client = createClient({ store });
});
afterEach(() => endProcessTest(processes, store, sql, schema));

/** Starts a worker process connecting as `role`, with 60 s leases: only its session can tell it died. */
async function worker(
  owner: string,
  role: { name: string; password: string },
  env: Record<string, string> = {},
): Promise<WorkerProcess> {
  const url = new URL(database().url);
  url.username = role.name;
  url.password = role.password;
  const started = await startWorkerProcess({
    DATABASE_URL: url.toString(),
    CAIRN_SCHEMA: schema,
    OWNER: owner,
    LEASE_MS: '60000',
    ...env,
  });
  processes.push(started);
  return started;
}

/** The roles the liveness sessions in this database connect as. */
async function sessionRoles(): Promise<string[]> {
  const rows = await sql<Array<{ usename: string }>>`
    select distinct usename from pg_stat_activity
     where datname = current_database() and application_name = 'cairn-session'
     order by usename`;
  return rows.map((row) => row.usename);
}

async function leaseEnds(runIds: readonly string[]): Promise<Date[]> {
  const rows = await sql.unsafe<Array<{ lease_until: Date }>>(
    `select lease_until from "${schema}".runs where run_id = any($1)`,
    [runIds],
  );
  return rows.map((row) => row.lease_until);
}

describe('workers connecting as two different roles', () => {
  it.each([
    ['a', 'b'],
    ['b', 'a'],
  ] as const)(
    'SIGKILL of the worker of role %s: the worker of role %s takes its runs over before their leases end',
    async (from, to) => {
      // A second step of ten minutes: every run is still in it when its worker is killed.
      const doomed = await worker(`doomed-${from}`, roles[from], { SLOW_MS: '600000' });
      const runIds: string[] = [];
      for (let i = 0; i < 4; i += 1)
        runIds.push((await client.start(processAgent(sql, schema, 0), `run ${i}`)).runId);
      // Every run has counted its second tool's side effect and is waiting in that tool.
      await until(async () => {
        const effects = await Promise.all(runIds.map((runId) => effectsOf(sql, schema, runId)));
        return effects.every((counted) => counted.a2 === 1);
      });
      const survivor = await worker(`survivor-${to}`, roles[to]);
      // Each worker's liveness session connects as its worker's role (the survivor's opens at its first claim).
      await until(async () => (await sessionRoles()).length === 2);
      expect(await sessionRoles()).toEqual([roles.a.name, roles.b.name].sort());
      const leases = await leaseEnds(runIds);
      expect(leases).toHaveLength(runIds.length);

      doomed.kill('SIGKILL');
      expect((await doomed.exited).signal).toBe('SIGKILL');
      for (const runId of runIds)
        expect(await client.result(runId, { pollMs: 50 })).toBe('three steps done');

      // Every run was finished while the 60 s leases of the killed worker were still running: its dead
      // session, found by a worker of another role, is what let them go.
      const [{ before }] = await sql<[{ before: boolean }]>`
        select now() < ${new Date(Math.min(...leases.map((end) => end.getTime())))} as before`;
      expect(before).toBe(true);
      expect(
        survivor
          .events('claimed')
          .map(({ runId, takenFrom, recoveries, epoch }) => ({
            runId,
            takenFrom,
            recoveries,
            epoch,
          }))
          .sort((x, y) => String(x.runId).localeCompare(String(y.runId))),
      ).toEqual(
        [...runIds]
          .sort()
          .map((runId) => ({ runId, takenFrom: `doomed-${from}`, recoveries: 1, epoch: 2 })),
      );
      for (const runId of runIds) {
        // Nothing ran twice: the tool in flight at the kill is reported unknown, not run again.
        expect(await effectsOf(sql, schema, runId)).toEqual({ a1: 1, a2: 1, a3: 1 });
        expect(await unknownCalls(store, runId)).toEqual(['a2']);
      }
    },
  );
});
