// `cairn-worker` as a new user runs it on Postgres, in the fresh project of ../pack-check.mjs: worker.ts is
// migrated and then run by the installed bin, both started as the worker README says for a .ts module on
// Node 22 before 22.18 (NODE_OPTIONS="--import tsx"), while client.ts, a process of its own that imports no model, tool or
// agent, starts a run by kind and name and waits for its output. The worker then exits 0 on SIGTERM.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import ts from 'typescript';

/** All that client.ts may import: the client, the store and its driver; nothing that holds a model or a tool. */
const clientImports = ['@cairn/worker', '@cairn/store-pg', 'postgres'];

/** How a .ts module is started on Node 22 before 22.18, as `cairn-worker --help` and the worker README say. */
const tsLoader = '--import tsx';

/** The whole Postgres round, from migrate to the worker's exit. */
const deadlineMs = 60_000;

/**
 * Runs the round in `project` on a database of its own (`DATABASE_URL`'s server, the local one or an embedded
 * one, as the tests get theirs) and drops it at the end, failed or not. Throws what went wrong.
 */
export async function checkWorkerBin({ project, step }) {
  checkClientImports(join(project, 'src', 'client.ts'));
  // Imported here, not at the top: @cairn/testing's dist exists only once pack-check has built the packages
  // (a fresh clone has none when this module loads).
  const { createTestDatabase } = await import('@cairn/testing');
  const database = await createTestDatabase({ prefix: 'cairn_pack_check' });
  const schema = `app_${randomBytes(4).toString('hex')}`;
  const env = { ...process.env, DATABASE_URL: database.url, PACK_CHECK_SCHEMA: schema };
  const children = [];
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    for (const child of children) child.kill('SIGKILL');
  }, deadlineMs);
  try {
    const migrate = `NODE_OPTIONS="${tsLoader}" npx --no cairn-worker migrate ./src/worker.ts`;
    step(`${migrate} (schema ${schema} of ${database.source} database ${database.database})`);
    const migrated = spawnSync('sh', ['-c', migrate], {
      cwd: project,
      env,
      encoding: 'utf8',
      timeout: deadlineMs,
    });
    process.stdout.write(migrated.stdout);
    process.stderr.write(migrated.stderr);
    if (migrated.status !== 0) throw new Error(`${migrate} exited with ${migrated.status}`);
    const tables = await countTables(project, database.url, schema);
    if (tables === 0) throw new Error(`${migrate} exited 0 but schema ${schema} holds no table`);

    step('cairn-worker ./src/worker.ts, and a client process starting a run by name; then SIGTERM');
    const workerEnv = {
      ...env,
      NODE_OPTIONS: tsLoader,
      CAIRN_OWNER: 'pack-check',
      CAIRN_CONCURRENCY: '2',
    };
    const worker = start(
      join(project, 'node_modules', '.bin', 'cairn-worker'),
      ['./src/worker.ts'],
      {
        cwd: project,
        env: workerEnv,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    children.push(worker.child);
    const events = [];
    const problems = [];
    let onCompleted;
    const completed = new Promise((resolve) => (onCompleted = resolve));
    createInterface({ input: worker.child.stdout }).on('line', (line) => {
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        problems.push(`cairn-worker printed a line that is not JSON: ${line}`);
        return;
      }
      events.push(event.type);
      if (event.type === 'started' && event.owner !== 'pack-check')
        problems.push(`CAIRN_OWNER was not applied: ${line}`);
      if (event.type === 'completed') onCompleted();
    });
    const stopped = (what) => `${what}; cairn-worker printed ${JSON.stringify(events)}`;

    const client = start(process.execPath, [...tsLoader.split(' '), './src/client.ts'], {
      cwd: project,
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(client.child);
    const first = await Promise.race([
      client.exited.then((code) => ({ client: code })),
      worker.exited.then((code) => ({ worker: code })),
    ]);
    if ('worker' in first) throw new Error(stopped(`cairn-worker exited with ${first.worker}`));
    if (first.client !== 0) throw new Error(stopped(`client.ts exited with ${first.client}`));
    await Promise.race([completed, worker.exited]);
    worker.child.kill('SIGTERM');
    const code = await worker.exited;
    if (code !== 0) throw new Error(stopped(`cairn-worker exited with ${code} on SIGTERM`));
    if (events.at(-1) !== 'closed' || !events.includes('completed'))
      throw new Error(stopped('cairn-worker did not complete the run and close'));
    if (problems.length > 0) throw new Error(problems.join('\n'));
    console.log(`cairn-worker printed ${events.join(', ')} and exited 0`);
  } catch (error) {
    if (!late) throw error;
    throw new Error(`not done within ${deadlineMs / 1000} s: ${error.message}`);
  } finally {
    clearTimeout(timer);
    for (const child of children) child.kill('SIGKILL');
    await database.drop();
  }
}

/** Fails unless client.ts imports (statically, dynamically or by require, types too) only `clientImports`. */
function checkClientImports(file) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const names = importedFiles.map(({ fileName }) => fileName);
  const others = names.filter((name) => !clientImports.includes(name));
  if (others.length > 0 || !names.includes('@cairn/worker')) {
    throw new Error(
      `client.ts must start runs by name with only ${clientImports.join(', ')}; it imports ${names.join(', ')}`,
    );
  }
}

function start(command, args, options) {
  const child = spawn(command, args, options);
  const exited = new Promise((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? signal)),
  );
  return { child, exited };
}

/** The tables of `schema`, read with the project's own postgres driver. */
async function countTables(project, url, schema) {
  const postgres = createRequire(join(project, 'package.json'))('postgres');
  const sql = postgres(url, { max: 1 });
  try {
    const [{ count }] =
      await sql`select count(*)::int as count from information_schema.tables where table_schema = ${schema}`;
    return count;
  } finally {
    await sql.end();
  }
}
