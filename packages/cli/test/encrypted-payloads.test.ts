/**
 * `cairn` on runs a payload codec encrypted (`protectPayloads`): without `--codec` nothing it prints or serves holds
 * a marker or a ciphertext, each encoded value shows as "(encrypted)" and it says once that `--codec` reads them;
 * with the codec it shows them; with a wrong key it says PAYLOAD_UNREADABLE for those runs.
 */
import { fileURLToPath } from 'node:url';
import { isSealed, protectPayloads, sealedPrefix } from '@cairn/sdk';
import { pgStore, type PgStore } from '@cairn/store-pg';
import { useTestDatabase } from '@cairn/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codec } from './fixtures/codec-module.js';
import {
  markerPrefix,
  markers,
  seedEncryptedRuns,
  type EncryptedRuns,
} from './fixtures/encrypted-runs.js';
import { parseSse } from './fixtures/http-get.js';
import { cairn, json, startCairn, type CairnResult } from './support.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const withCodec = ['--codec', fixture('codec-module.ts')];
const withWrongKey = ['--codec', fixture('wrong-key-codec-module.ts')];

const database = useTestDatabase({ prefix: 'cairn_cli_codec' });

/** Fails with `label` when `text` holds a marker or a ciphertext. */
function expectNothingLeaked(label: string, text: string): void {
  expect(text.includes(markerPrefix), `${label} shows a marker`).toBe(false);
  expect(text.includes(sealedPrefix), `${label} shows ciphertext`).toBe(false);
}

/** Starts `cairn ui` with `args` and reads what `paths` answer, then stops it. */
async function readUi(
  env: Record<string, string>,
  args: string[],
  paths: string[],
): Promise<Map<string, string>> {
  const serving = startCairn(['ui', '--port', '0', '--json', ...args], env);
  try {
    await expect.poll(() => serving.stdout, { timeout: 20_000, interval: 100 }).toMatch(/\n$/);
    const { url } = json<{ url: string }>(serving.stdout);
    const answers = await Promise.all(
      paths.map(async (path) => (await fetch(new URL(path, url))).text()),
    );
    return new Map(paths.map((path, at) => [path, answers[at]!]));
  } finally {
    serving.kill('SIGINT');
    await serving.exited;
  }
}

describe('cairn on runs whose payloads a codec encrypted', () => {
  let sql: postgres.Sql;
  let raw: PgStore;
  let ids: EncryptedRuns;
  let env: Record<string, string>;
  const printed = new Map<string, CairnResult>();
  /** What a command run in `beforeAll` printed, by its arguments joined with spaces. */
  const output = (args: string[]): CairnResult => {
    const result = printed.get(args.join(' '));
    if (result === undefined) throw new Error(`not run: ${args.join(' ')}`);
    return result;
  };
  const reads = (runId: string) => [
    ['runs', 'show', runId],
    ['runs', 'show', runId, '--json'],
    ['runs', 'timeline', runId],
    ['runs', 'timeline', runId, '--json'],
  ];

  beforeAll(async () => {
    const { url } = database();
    sql = postgres(url, { max: 4, onnotice: () => undefined });
    raw = pgStore({ sql, schema: 'vault' });
    await raw.migrate();
    ids = await seedEncryptedRuns(protectPayloads(raw, { codec }));
    env = { DATABASE_URL: url, CAIRN_SCHEMA: 'vault' };
    const plain = [
      ['runs', 'list'],
      ['runs', 'list', '--json'],
      ...Object.values(ids).flatMap(reads),
      ['runs', 'watch', ids.completed],
      ['runs', 'watch', ids.completed, '--json'],
    ];
    const decoded = [
      ['runs', 'list'],
      ['runs', 'list', '--json'],
      ...Object.values(ids).map((runId) => ['runs', 'show', runId, '--json']),
      ['runs', 'show', ids.completed],
      ['runs', 'timeline', ids.completed],
      ['runs', 'timeline', ids.completed, '--json'],
      ['runs', 'watch', ids.completed],
    ];
    const commands = [
      ...plain,
      ...decoded.map((args) => [...args, ...withCodec]),
      ['runs', 'list', ...withWrongKey],
      ['runs', 'list', '--json', ...withWrongKey],
      ['runs', 'show', ids.completed, ...withWrongKey],
      ['runs', 'timeline', ids.failed, '--json', ...withWrongKey],
    ];
    const results = await Promise.all(commands.map((args) => cairn(args, env)));
    for (const [at, args] of commands.entries()) printed.set(args.join(' '), results[at]!);
  }, 120_000);
  afterAll(async () => {
    await raw?.close();
    await sql?.end({ timeout: 5 });
  });

  it('has stored every run encoded: no marker in its rows, only ciphertext', async () => {
    for (const runId of Object.values(ids)) {
      const stored = JSON.stringify([await raw.load(runId), await raw.readStream(runId)]);
      expect(stored).toContain(sealedPrefix);
      expect(stored).not.toContain(markerPrefix);
    }
    expect((await raw.mailbox(ids.waiting)).map((signal) => isSealed(signal.payload))).toEqual([
      true,
    ]);
  });

  it('shows no marker and no ciphertext without --codec, each encoded value as "(encrypted)"', () => {
    for (const [args, result] of printed) {
      if (args.includes('--codec')) continue;
      expect([args, result.code]).toEqual([args, 0]);
      expectNothingLeaked(args, result.stdout + result.stderr);
    }
    const list = output(['runs', 'list']).stdout;
    expect(list).toMatch(
      /^The payloads of 3 runs above are encrypted, shown as \(encrypted\): start cairn with --codec/m,
    );
    const listed = json<{ runs: Array<{ runId: string; encrypted: boolean; error: unknown }> }>(
      output(['runs', 'list', '--json']).stdout,
    ).runs;
    expect(listed.map((run) => [run.runId, run.encrypted])).toEqual(
      Object.values(ids).map((runId) => [runId, true]),
    );
    expect(listed.find((run) => run.runId === ids.failed)?.error).toEqual({
      code: 'MODEL_FAILED',
      message: '(encrypted)',
    });

    const shown = json<{ run: Record<string, unknown> }>(
      output(['runs', 'show', ids.completed, '--json']).stdout,
    ).run;
    expect(shown).toMatchObject({
      status: 'completed',
      encrypted: true,
      input: '(encrypted)',
      output: '(encrypted)',
    });
    const text = output(['runs', 'show', ids.completed]).stdout;
    expect(text).toMatch(/^input\s+\(encrypted\)$/m);
    expect(text).toMatch(/^This run's payloads are encrypted, shown as \(encrypted\)/m);
    expect(output(['runs', 'show', ids.failed]).stdout).toMatch(
      /^error\s+MODEL_FAILED: \(encrypted\)$/m,
    );
    // A held call is still named by its id and arguments hash, which is what approving needs.
    expect(output(['runs', 'show', ids.waiting]).stdout).toMatch(
      /^waits for\s+approval of \(encrypted\) \(encrypted\): tool call pay, args hash [0-9a-f]{64}$/m,
    );
  });

  it('shows what the record says of an encrypted timeline: status, times, how it ended, and why no more', () => {
    const lines = output(['runs', 'timeline', ids.failed]).stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`${ids.failed}  agent failing  failed`);
    expect(lines[1]).toMatch(
      /^This run's history and payloads are encrypted, shown as \(encrypted\)/,
    );
    expect(lines[2]).toMatch(/^created \d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}updated \d{4}-/);
    expect(lines.at(-1)).toBe('ended failed MODEL_FAILED');
    const { timeline } = json<{ timeline: Record<string, unknown> }>(
      output(['runs', 'timeline', ids.completed, '--json']).stdout,
    );
    expect(timeline).toMatchObject({ status: 'completed', encrypted: true, attempts: [] });

    const watched = output(['runs', 'watch', ids.completed]).stdout;
    expect(watched).toMatch(/^This run's history and payloads are encrypted/);
    expect(watched).toContain('(trip-0/model said something encrypted');
    expect(output(['runs', 'watch', ids.completed, '--json']).stderr).toMatch(
      /^warning: This run's history and payloads are encrypted/,
    );
  });

  it('shows every marker with --codec', () => {
    for (const [args, result] of printed) {
      if (!args.endsWith(withCodec.join(' '))) continue;
      expect([args, result.code]).toEqual([args, 0]);
      expect(result.stdout, args).not.toContain('(encrypted)');
      expect(result.stdout, args).not.toContain(sealedPrefix);
    }
    const show = (runId: string) =>
      json<{ run: Record<string, unknown> }>(
        output(['runs', 'show', runId, '--json', ...withCodec]).stdout,
      ).run;
    expect(show(ids.completed)).toMatchObject({
      encrypted: false,
      input: markers.input,
      output: `Done: ${markers.output}`,
    });
    expect(show(ids.failed).error).toMatchObject({
      message: expect.stringContaining(markers.error),
    });
    expect(show(ids.waiting).waitingFor).toMatchObject({
      approvals: [{ callId: 'pay', tool: 'transfer', args: { note: markers.args } }],
    });
    expect(output(['runs', 'timeline', ids.completed, ...withCodec]).stdout).toMatch(
      /✓ execute_tool lookup\s+ok/,
    );
    expect(output(['runs', 'watch', ids.completed, ...withCodec]).stdout).toContain(
      `Done: ${markers.output}`,
    );
    expect(output(['runs', 'list', ...withCodec]).stdout).not.toMatch(/encrypted/);
  });

  it('says PAYLOAD_UNREADABLE for each run a wrong key cannot read, and lists them all', () => {
    const listed = json<{ runs: Array<{ runId: string; unreadable: string | null }> }>(
      output(['runs', 'list', '--json', ...withWrongKey]).stdout,
    ).runs;
    expect(listed.map((run) => run.runId)).toEqual(Object.values(ids));
    for (const run of listed) {
      expect(run.unreadable).toMatch(
        new RegExp(`^The .+ of run "${run.runId}" cannot be read: its ciphertext fails its check`),
      );
    }
    const table = output(['runs', 'list', ...withWrongKey]).stdout;
    expect(table.match(/PAYLOAD_UNREADABLE \(its rows cannot be read\)/g)).toHaveLength(3);
    const show = output(['runs', 'show', ids.completed, ...withWrongKey]);
    expect(show.code).toBe(1);
    expect(show.stderr).toMatch(
      /^error PAYLOAD_UNREADABLE: The .+ of run "sealed-completed" cannot be read: its ciphertext fails its check: changed, or copied from another run or place\.\n$/,
    );
    const timeline = output(['runs', 'timeline', ids.failed, '--json', ...withWrongKey]);
    expect(timeline.code).toBe(1);
    expect(json<{ error: { code: string } }>(timeline.stderr).error.code).toBe(
      'PAYLOAD_UNREADABLE',
    );
    for (const result of [show, timeline]) expectNothingLeaked('wrong key', result.stderr);
  });

  it("serves cairn ui's API without a marker or ciphertext, and with the markers given --codec", async () => {
    const run = (runId: string) => `/api/runs/${encodeURIComponent(runId)}`;
    const paths = [
      '/api/runs',
      ...Object.values(ids).flatMap((runId) => [
        run(runId),
        `${run(runId)}/events`,
        `${run(runId)}/stream`,
      ]),
      `${run(ids.completed)}/watch`,
      `${run(ids.failed)}/watch`,
    ];
    const hidden = await readUi(env, [], paths);
    for (const [path, body] of hidden) expectNothingLeaked(path, body);
    const listed = JSON.parse(hidden.get('/api/runs')!) as { runs: { encrypted: boolean }[] };
    expect(listed.runs.map((row) => row.encrypted)).toEqual([true, true, true]);
    expect(JSON.parse(hidden.get(run(ids.completed))!).run).toMatchObject({
      encrypted: true,
      output: '(encrypted)',
    });
    expect(hidden.get(`${run(ids.completed)}/stream`)).toContain(
      '"type":"sealed","data":"(encrypted)"',
    );

    const decoded = await readUi(env, withCodec, paths);
    expect(JSON.parse(decoded.get(run(ids.completed))!).run).toMatchObject({
      encrypted: false,
      output: `Done: ${markers.output}`,
    });
    const said = parseSse(decoded.get(`${run(ids.completed)}/stream`)!)
      .filter((message) => message.event === 'message')
      .map((message) => JSON.parse(message.data) as { part: { type: string; text?: string } })
      .map(({ part }) => (part.type === 'text' ? part.text : JSON.stringify(part)))
      .join('');
    expect(said).toContain(`Done: ${markers.output}`);
    expect(said).toContain(markers.tool);
    for (const [path, body] of decoded) expect(body, path).not.toContain(sealedPrefix);
  });

  it('refuses to write into an encrypted run without --codec, and writes encoded with it', async () => {
    const refused = await Promise.all([
      cairn(['runs', 'signal', ids.waiting, 'memo', '--payload', '{"text":"plain"}'], env),
      cairn(['runs', 'approve', ids.waiting, 'pay'], env),
      cairn(['runs', 'cancel', ids.waiting], env),
    ]);
    for (const result of refused) {
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(
        /^error USAGE: Cannot .+ run "sealed-waiting": its payloads are encrypted, .* Start cairn with --codec/,
      );
    }
    expect(await raw.mailbox(ids.waiting)).toHaveLength(1);

    const sent = await cairn(
      ['runs', 'signal', ids.waiting, 'memo', '--payload', '{"text":"plain"}', ...withCodec],
      env,
    );
    expect(sent.code).toBe(0);
    const mailbox = await raw.mailbox(ids.waiting);
    expect(mailbox).toHaveLength(2);
    expect(isSealed(mailbox[1]!.payload)).toBe(true);
  });

  it("reads through a --module whose store is already protected, and names the codec module's mistakes", async () => {
    const [viaModule, fromEnv, noCodec, missing, twice] = await Promise.all([
      cairn(
        ['runs', 'show', ids.completed, '--json', '--module', fixture('protected-module.ts')],
        env,
      ),
      cairn(['runs', 'show', ids.completed, '--json'], {
        ...env,
        CAIRN_CODEC: fixture('codec-module.ts'),
      }),
      cairn(['runs', 'list', '--codec', fixture('no-codec-module.ts')], env),
      cairn(['runs', 'list', '--codec', './no/such/codec.js'], env),
      cairn(
        [
          'runs',
          'list',
          '--module',
          fixture('protected-module.ts'),
          '--codec',
          fixture('codec-module.ts'),
        ],
        env,
      ),
    ]);
    for (const result of [viaModule, fromEnv]) {
      expect(result.code).toBe(0);
      expect(json<{ run: { input: string } }>(result.stdout).run.input).toBe(markers.input);
    }
    expect(noCodec.code).toBe(2);
    expect(noCodec.stderr).toMatch(
      /^error USAGE: .*no-codec-module\.ts exports no codec: export `codec`/,
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error USAGE: No codec module at .*no\/such\/codec\.js/);
    // A codec given twice would read every payload as plaintext: refused, saying why.
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/already behind protectPayloads/);
  });
});
