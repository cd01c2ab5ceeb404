/**
 * The main demo: two worker processes on Postgres run an agent and a planner; the worker holding them is
 * SIGKILLed mid-run and the survivor takes both over. Run it with `pnpm start`. It uses DATABASE_URL, else
 * a local Postgres on 127.0.0.1:5432, else an embedded Postgres it starts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { childRunId } from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import { createTestDatabase } from '@cairn/testing';
import { createClient } from '@cairn/worker';
import postgres from 'postgres';
import { createSideEffectsTable, demoDefinitions } from './demo/definitions.js';

const schema = 'cairn_demo';
const started = Date.now();
const at = () => `${String(Date.now() - started).padStart(5)} ms`;
const say = (text: string) => console.log(`${at()}  ${text}`);

const database = await createTestDatabase({ prefix: 'cairn_demo' }).catch((error: unknown) => {
  // DATABASE_URL names a server that is not there (or refuses us): say so, not a driver's stack.
  const reason = error instanceof Error ? error.message : String(error);
  console.error(
    process.env.DATABASE_URL
      ? `The demo cannot reach Postgres at DATABASE_URL (${reason}). Start that server, or unset ` +
          'DATABASE_URL to use the one on 127.0.0.1:5432, else an embedded server the demo starts itself.'
      : `The demo found no Postgres on 127.0.0.1:5432 and could not start an embedded one: ${reason}`,
  );
  process.exit(1);
});
say(
  `Postgres: ${database.source === 'embedded' ? 'an embedded server started for the demo' : database.source === 'env' ? 'DATABASE_URL' : 'the local server'}, database ${database.database}`,
);
const sql = postgres(database.url, { max: 4, onnotice: () => undefined });
const store = pgStore({ sql, schema });
await store.migrate();
await createSideEffectsTable(sql, schema);
const { travel, lisbon, idempotentTools } = demoDefinitions(sql, schema);
const client = createClient({ store });

type Line = {
  line: string;
  type?: string;
  runId?: string;
  point?: string;
  effectId?: string | null;
  [key: string]: unknown;
};
const tsx = createRequire(import.meta.url).resolve('tsx/esm');
const workerScript = fileURLToPath(new URL('./demo/worker.ts', import.meta.url));

function startWorker(name: string): { child: ChildProcess; lines: Line[]; ready: Promise<void> } {
  const child = spawn(
    process.execPath,
    ['--import', tsx, '--conditions=@cairn/source', workerScript],
    {
      env: { ...process.env, DATABASE_URL: database.url, CAIRN_SCHEMA: schema, OWNER: name },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines: Line[] = [];
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const line = JSON.parse(text) as Line;
    lines.push(line);
    if (line.line === 'ready') markReady();
    narrate(name, line);
  });
  return { child, lines, ready };
}

function narrate(worker: string, line: Line): void {
  if (line.line === 'event' && line.type === 'claimed') {
    const from =
      line.takenFrom === null
        ? `(${String(line.status)})`
        : `taken over from ${String(line.takenFrom)}`;
    say(
      `[${worker}] claimed ${String(line.runKind)} ${line.runId} at epoch ${String(line.epoch)} ${from}`,
    );
  } else if (line.line === 'event' && line.type === 'waiting') {
    say(
      `[${worker}] ${line.runId} waits for ${(line.signals as string[]).join(' or ')}; its slot is free, it holds no lease`,
    );
  } else if (
    line.line === 'event' &&
    ['completed', 'failed', 'handed_over', 'lease_lost'].includes(line.type ?? '')
  ) {
    say(`[${worker}] ${line.type} ${line.runId}`);
  } else if (line.line === 'boundary' && line.point === 'effect.before') {
    say(`[${worker}]   ${line.runId}: starts ${line.effectId}`);
  }
}

const waitFor = async (lines: Line[], predicate: (line: Line) => boolean) => {
  while (!lines.some(predicate)) await new Promise((resolve) => setTimeout(resolve, 20));
};

say('starting worker-A');
const a = startWorker('worker-A');
await a.ready;
const agentRun = await client.start(travel, 'Book me PEK to SFO and email me the confirmation.', {
  runId: 'trip-pek-sfo',
});
const plannerRun = await client.start(lisbon, 'Plan three days in Lisbon.', {
  runId: 'lisbon-weekend',
});
say(`client started agent run ${agentRun.runId} and planner run ${plannerRun.runId}`);
await waitFor(a.lines, (l) => l.type === 'claimed' && l.runId === agentRun.runId);
await waitFor(a.lines, (l) => l.type === 'claimed' && l.runId === plannerRun.runId);

say('starting worker-B; worker-A holds both runs');
const b = startWorker('worker-B');
await b.ready;

// Kill worker-A while the flight booking (a tool with a side effect) is in flight.
await waitFor(
  a.lines,
  (l) =>
    l.point === 'effect.before' && l.runId === agentRun.runId && l.effectId === 'trip-1/tool/book',
);
a.child.kill('SIGKILL');
// Said from what worker-A printed before it died, not assumed from timing.
const bookingReturned = a.lines.some(
  (l) =>
    l.point === 'effect.after' && l.runId === agentRun.runId && l.effectId === 'trip-1/tool/book',
);
say(
  `SIGKILL worker-A (${bookingReturned ? 'the booking had already returned' : 'the booking is in flight'})`,
);
const agentAtKill = (await store.load(agentRun.runId))?.run.snapshot as {
  state: { trips: number };
};
const plannerAtKill = (await store.load(plannerRun.runId))?.run.snapshot as {
  state: { ledger: Array<{ id: string }> };
};
say(
  `at the kill: ${agentRun.runId}'s last checkpoint is the start of trip ${agentAtKill.state.trips}; ` +
    `${plannerRun.runId}'s last checkpoint holds settled nodes [${plannerAtKill.state.ledger.map((n) => n.id).join(', ')}]`,
);

// The taken-over agent books, then asks to email the traveller: a call held for a person's approval.
await waitFor(b.lines, (l) => l.type === 'waiting' && l.runId === agentRun.runId);
for (const run of await client.list({ status: 'waiting' })) {
  for (const call of run.waitingFor?.approvals ?? []) {
    say(`a person reads ${run.runId}'s held call: ${call.tool} ${JSON.stringify(call.args)}`);
    const receipt = await client.approve(run.runId, call.callId, {
      argsHash: call.argsHash,
      by: 'ada',
    });
    // A second click on the same button: accepted once.
    const again = await client.approve(run.runId, call.callId, {
      argsHash: call.argsHash,
      by: 'ada',
    });
    say(
      `client approved it (signal #${receipt.seq}); a second click was ${again.duplicate ? 'a duplicate, acted on once' : 'NOT deduplicated'}`,
    );
  }
}

const agentOutput = await client.result(agentRun.runId, { pollMs: 100 });
const plannerOutput = await client.result(plannerRun.runId, { pollMs: 100 });
say(`${agentRun.runId} output: ${JSON.stringify(agentOutput)}`);
say(`${plannerRun.runId} output: ${JSON.stringify(plannerOutput)}`);

console.log('\nside effects (each row is one tool call; n is how often it actually ran):');
const effects = await sql.unsafe<
  Array<{ run_id: string; tool_call_id: string; tool: string; n: number }>
>(
  `select run_id, tool_call_id, tool, n from "${schema}".side_effects order by run_id, tool_call_id`,
);
for (const row of effects) {
  const note = idempotentTools.has(row.tool)
    ? '  (idempotent: may run again if in flight at a crash)'
    : '';
  console.log(
    `  ${row.run_id.padEnd(24)} ${row.tool.padEnd(15)} ${row.tool_call_id.padEnd(12)} n=${row.n}${note}`,
  );
}

const unknown: string[] = [];
for (const runId of [agentRun.runId, childRunId(plannerRun.runId, 'hotel')]) {
  const snapshot = (await store.load(runId))?.run.snapshot as
    | { state: { messages: Array<{ role: string; toolCallId?: string; outcome?: string }> } }
    | undefined;
  for (const message of snapshot?.state.messages ?? []) {
    if (message.role === 'tool' && message.outcome === 'unknown')
      unknown.push(`${runId}: ${message.toolCallId}`);
  }
}
const twice = effects.filter((row) => row.n > 1 && !idempotentTools.has(row.tool));
console.log(
  twice.length === 0
    ? '\nno tool with a side effect ran twice'
    : `\nRAN TWICE: ${twice.map((row) => row.tool_call_id).join(', ')}`,
);
console.log(
  `reported to the model as outcome unknown (in flight at the kill, not re-run): ${unknown.join('; ') || 'none'}`,
);
for (const runId of [agentRun.runId, plannerRun.runId]) {
  const usage = ((await store.load(runId))?.run.snapshot as { state: { usage: object } }).state
    .usage;
  console.log(`usage of ${runId}, each model call counted once: ${JSON.stringify(usage)}`);
}

// What an operator sees of the two runs afterwards, with the `cairn` command on the same database: each
// attempt, the takeover, the booking whose outcome is unknown, and the planner's child run under its node.
const cairn = fileURLToPath(new URL('../packages/cli/src/cairn.ts', import.meta.url));
for (const runId of [agentRun.runId, plannerRun.runId]) {
  console.log(`\n$ cairn runs timeline ${runId}`);
  const command = spawn(
    process.execPath,
    ['--import', tsx, '--conditions=@cairn/source', cairn, 'runs', 'timeline', runId],
    { env: { ...process.env, DATABASE_URL: database.url, CAIRN_SCHEMA: schema }, stdio: 'inherit' },
  );
  const [code] = (await once(command, 'exit')) as [number | null];
  if (code !== 0) {
    console.error(`cairn runs timeline ${runId} exited with ${code}`);
    process.exitCode = 1;
  }
}

b.child.kill('SIGTERM');
await new Promise((resolve) => b.child.once('exit', resolve));
await store.close();
await sql.end({ timeout: 5 });
await database.drop();
if (twice.length > 0) process.exitCode = 1;
