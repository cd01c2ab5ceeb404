// The fresh app's client process, as an API server runs one: it starts a run of the worker's agent by kind and
// name and waits for its output. It imports no model, tool or agent definition, and worker-bin.mjs fails the
// check when it imports anything but @cairn/worker, @cairn/store-pg and postgres.
import { pgStore } from '@cairn/store-pg';
import { createClient } from '@cairn/worker';
import postgres from 'postgres';

const { DATABASE_URL: url, PACK_CHECK_SCHEMA: schema } = process.env;
if (url === undefined || schema === undefined)
  throw new Error('Set DATABASE_URL and PACK_CHECK_SCHEMA.');

const sql = postgres(url);
try {
  const client = createClient({ store: pgStore({ sql, schema }) });
  const { runId } = await client.start({ kind: 'agent', name: 'adder' }, 'What is 19 + 23?');
  const output = await client.result(runId, { pollMs: 50, timeoutMs: 20_000 });
  if (JSON.stringify(output) !== '{"sum":42}') {
    throw new Error(`run ${runId} answered ${JSON.stringify(output)}, not {"sum":42}`);
  }
  console.log(`client: run ${runId} of agent "adder" answered ${JSON.stringify(output)}`);
} finally {
  await sql.end();
}
