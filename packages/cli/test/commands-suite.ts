/**
 * What a user of `cairn` sees, on a store seeded with every shape of run (`seedScenarios`): the same assertions
 * for each store, each file bringing its store. The read-only commands run once, side by side, before the
 * tests look at what they printed; the commands that change runs (`steering-suite.ts`) run in order after.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedScenarios, type Scenarios } from './fixtures/scenarios.js';
import { describeSteering } from './steering-suite.js';
import { cairn, json, startCairn, type CairnResult, type SuiteStore } from './support.js';

interface Listed {
  runs: Array<{
    runId: string;
    status: string;
    kind: string;
    name: string;
    held: boolean;
    encrypted: boolean;
  }>;
}

export function describeCairnCommands(label: string, open: () => Promise<SuiteStore>): void {
  describe(`cairn on ${label}`, () => {
    let suite: SuiteStore;
    let ids: Scenarios;
    const read = new Map<string, CairnResult>();
    const run = (args: string[]) => cairn(args, suite.env);
    /** What a read-only command printed (they all ran in `beforeAll`). */
    const printed = (args: string): CairnResult => {
      const result = read.get(args);
      if (result === undefined) throw new Error(`not run: ${args}`);
      return result;
    };

    beforeAll(async () => {
      suite = await open();
      ids = await seedScenarios(suite.store, 'run');
      const commands = [
        'runs list',
        'runs list --json',
        'runs list --status completed,failed --json',
        'runs list --name travel --json',
        'runs list --kind planner --json',
        'runs list --waiting',
        'runs list --limit 2 --json',
        `runs show ${ids.crashed}`,
        `runs show ${ids.crashed} --json`,
        `runs show ${ids.waiting}`,
        `runs show ${ids.planner}`,
        `runs timeline ${ids.crashed}`,
        `runs timeline ${ids.crashed} --json`,
        `runs timeline ${ids.planner}`,
        `runs watch ${ids.completed} --json`,
        `runs watch ${ids.completed}`,
        `runs watch ${ids.planner}`,
        'runs show no-such-run',
        'runs timeline no-such-run --json',
      ];
      const results = await Promise.all(commands.map((command) => run(command.split(' '))));
      for (const [at, command] of commands.entries()) read.set(command, results[at]!);
    });
    afterAll(async () => {
      await suite?.close();
    });

    it('lists every run in a table, and as JSON', () => {
      const table = printed('runs list');
      expect(table.code).toBe(0);
      expect(table.stdout.split('\n')[0]).toMatch(/^RUN\s+KIND\s+NAME\s+STATUS\s+HOLDER\s+UPDATED/);
      for (const id of Object.values(ids)) expect(table.stdout).toContain(id);
      expect(table.stdout).not.toContain('\u001b['); // not a terminal: no colour
      const { runs } = json<Listed>(printed('runs list --json').stdout);
      expect(runs.map((r) => r.runId).sort()).toEqual(Object.values(ids).sort());
      // Written without a codec: nothing is shown as encrypted, and nothing says so.
      expect(runs.filter((r) => r.encrypted)).toEqual([]);
      expect(table.stdout).not.toContain('encrypted');
      expect(Object.keys(runs.find((r) => r.runId === ids.crashed)!).sort()).toEqual(
        [
          'cancelRequested',
          'createdAt',
          'encrypted',
          'epoch',
          'error',
          'held',
          'holderGone',
          'kind',
          'leaseUntil',
          'name',
          'owner',
          'parentRunId',
          'recoveries',
          'rootRunId',
          'runId',
          'status',
          'unreadable',
          'updatedAt',
          'waitingFor',
        ].sort(),
      );
    });

    it('filters the list by status, name, kind, waiting, and limits it', () => {
      const ofList = (args: string) =>
        json<Listed>(printed(args).stdout)
          .runs.map((r) => r.runId)
          .sort();
      expect(ofList('runs list --status completed,failed --json')).toEqual(
        [ids.completed, ids.crashed, ids.planner, ids.child, ids.failed].sort(),
      );
      expect(ofList('runs list --name travel --json')).toEqual(
        [ids.completed, ids.crashed, ids.waiting, ids.queued].sort(),
      );
      expect(ofList('runs list --kind planner --json')).toEqual([ids.planner]);
      expect(json<Listed>(printed('runs list --limit 2 --json').stdout).runs).toHaveLength(2);
      const waiting = printed('runs list --waiting').stdout;
      expect(waiting).toContain(ids.waiting);
      expect(waiting).toContain('approval of send_email (call email)');
      expect(waiting).not.toContain(ids.queued);
    });

    it('shows the crashed run: its holder, epoch, recoveries, input and output', () => {
      const { code, stdout } = printed(`runs show ${ids.crashed}`);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^status\s+completed$/m);
      // It ended: its last holder gave the lease up.
      expect(stdout).toMatch(/^holder\s+-$/m);
      expect(stdout).toMatch(/^epoch\s+2$/m);
      expect(stdout).toMatch(/^recoveries\s+1$/m);
      expect(stdout).toMatch(/^input\s+Book PEK to SFO$/m);
      expect(stdout).toMatch(/^output\s+Booked CA985 and emailed Ada\.$/m);
      const detail = json<{ run: Record<string, unknown> }>(
        printed(`runs show ${ids.crashed} --json`).stdout,
      ).run;
      expect(detail).toMatchObject({
        runId: ids.crashed,
        kind: 'agent',
        name: 'travel',
        status: 'completed',
        owner: null,
        held: false,
        epoch: 2,
        recoveries: 1,
        input: 'Book PEK to SFO',
        output: 'Booked CA985 and emailed Ada.',
        children: [],
        error: null,
      });
    });

    it('shows what a waiting run waits for, and a planner its child run', () => {
      const waiting = printed(`runs show ${ids.waiting}`).stdout;
      expect(waiting).toMatch(/^status\s+waiting$/m);
      expect(waiting).toMatch(
        /^waits for\s+approval of send_email .*tool call email, args hash [0-9a-f]{64}/m,
      );
      const planner = printed(`runs show ${ids.planner}`).stdout;
      expect(planner).toContain(`children    ${ids.child} (agent concierge, completed)`);
      expect(planner).toMatch(/^input\s+Plan a Lisbon trip$/m);
    });

    it("shows the crashed run's timeline: two attempts, a takeover, book_flight's outcome unknown", () => {
      const { code, stdout } = printed(`runs timeline ${ids.crashed}`);
      expect(code).toBe(0);
      const lines = stdout.trimEnd().split('\n');
      const first = lines.findIndex((line) => /^attempt 1\s+epoch 1\s+worker-a/.test(line));
      const second = lines.findIndex((line) =>
        /^attempt 2\s+epoch 2\s+worker-b.*taken over from worker-a/.test(line),
      );
      expect(first).toBeGreaterThan(-1);
      expect(second).toBeGreaterThan(first);
      const crashed = lines.slice(first, second).join('\n');
      expect(crashed).toMatch(
        /stopped without ending the run \(crashed, or lost its lease\); taken over by worker-b/,
      );
      // The call in flight at the crash is the crashed attempt's, found so by the one that took over.
      expect(crashed).toMatch(
        /\? execute_tool book_flight\s+OUTCOME UNKNOWN.*in flight when this attempt stopped; found so by attempt 2 \(worker-b\)/,
      );
      expect(lines.slice(second).join('\n')).not.toMatch(/book_flight/);
      expect(lines.at(-1)).toBe('  ended completed');
      const { timeline } = json<{
        timeline: { attempts: Array<{ owner: string; takenFrom: string | null }> };
      }>(printed(`runs timeline ${ids.crashed} --json`).stdout);
      expect(timeline.attempts.map((a) => [a.owner, a.takenFrom])).toEqual([
        ['worker-a', null],
        ['worker-b', 'worker-a'],
      ]);
    });

    it("shows the planner's plan as a DAG with node states, and its child run under the node", () => {
      const { code, stdout } = printed(`runs timeline ${ids.planner}`);
      expect(code).toBe(0);
      expect(stdout).toMatch(/plan revision 0, executing, 3 nodes/);
      expect(stdout).toMatch(/✓ weather\s+weather\s+completed/);
      expect(stdout).toMatch(/✓ flights\s+flights\s+completed/);
      // hotel depends on weather: one level deeper.
      expect(stdout).toMatch(/ {4}✓ hotel\s+concierge\s+completed\s+after weather; child run/);
      const lines = stdout.split('\n');
      const node = lines.findIndex((line) => /^\s+node hotel/.test(line));
      const child = lines.findIndex((line) =>
        line.includes(`${ids.child}  agent concierge  completed`),
      );
      expect(node).toBeGreaterThan(-1);
      expect(child).toBeGreaterThan(node);
      expect(lines[child]).toMatch(/^ {6,}/);
    });

    it('watches a run that ended: every event once, JSON lines with seq, then exits 0', async () => {
      const streamed = printed(`runs watch ${ids.completed} --json`);
      expect(streamed.code).toBe(0);
      const events = streamed.stdout
        .trim()
        .split('\n')
        .map((line) => json<{ seq: number; type: string }>(line));
      expect(events[0]!.type).toBe('attempt.started');
      expect(events.at(-1)!.type).toBe('ended');
      const seqs = events.map((event) => event.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      const text = printed(`runs watch ${ids.completed}`).stdout.trim().split('\n');
      // Every event on a line of its own, and the text the model streamed on its own line too.
      const eventLines = text.filter((line) => /^#\d+ /.test(line));
      expect(eventLines).toHaveLength(events.length);
      expect(eventLines.at(-1)).toMatch(/^#\d+ \d\d:\d\d:\d\d\.\d{3} ended completed$/);
      expect(text.filter((line) => !/^#\d+ /.test(line))).toEqual([
        'Booked CA985 and emailed Ada.',
      ]);
      const resumed = await run([
        'runs',
        'watch',
        ids.completed,
        '--json',
        '--after',
        String(seqs.at(-2)),
      ]);
      expect(
        resumed.stdout
          .trim()
          .split('\n')
          .map((line) => json(line)),
      ).toEqual([events.at(-1)]);
    });

    it('watches a planner: its plan as the model wrote it, and its agent node’s text after the node’s id', async () => {
      const { code, stdout } = printed(`runs watch ${ids.planner}`);
      expect(code).toBe(0);
      const lines = stdout.trim().split('\n');
      // The run ended before it was watched: its events and its text (and its child's) are told in the order
      // they happened, each on lines of its own.
      const at = (find: (line: string) => boolean) => lines.findIndex(find);
      const plan = at((line) => line.startsWith('{"nodes":[{"id":"weather"'));
      const planning = at((line) => /chat o3 started/.test(line));
      const planned = at((line) => /chat o3 ok/.test(line));
      const nodeStarted = at((line) => /invoke_agent concierge started/.test(line));
      const childText = at((line) => line === '  hotel ▸ Casa Azul, by the river.');
      const nodeSettled = at((line) => /invoke_agent concierge ok/.test(line));
      // The plan's text between its model call's start and its end.
      expect(plan).toBeGreaterThan(planning);
      expect(planned).toBeGreaterThan(plan);
      expect(planning).toBeGreaterThan(0);
      expect(nodeStarted).toBeGreaterThan(plan);
      expect(childText).toBeGreaterThan(nodeStarted);
      expect(nodeSettled).toBeGreaterThan(childText);
      expect(lines.at(-1)).toMatch(/ended completed$/);
    });

    it('watches a waiting run until Ctrl-C, then exits 130', async () => {
      const watching = startCairn(['runs', 'watch', ids.waiting, '--json'], suite.env);
      await expect
        .poll(() => watching.stdout, { timeout: 20_000, interval: 100 })
        .toMatch(/"type":"waiting"/);
      watching.kill('SIGINT');
      const { code, stdout } = await watching.exited;
      expect(code).toBe(130);
      const events = stdout
        .trim()
        .split('\n')
        .map((line) => json<{ type: string }>(line));
      expect(events.at(-1)!.type).toBe('waiting');
    });

    it('serves the web page with cairn ui until Ctrl-C, then exits 130', async () => {
      const serving = startCairn(['ui', '--port', '0', '--json'], suite.env);
      await expect.poll(() => serving.stdout, { timeout: 20_000, interval: 100 }).toMatch(/\n$/);
      const { url } = json<{ url: string }>(serving.stdout);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const page = await fetch(url);
      expect(page.status).toBe(200);
      const listed = await fetch(new URL('api/runs', url));
      expect(JSON.stringify(await listed.json())).toContain(ids.crashed);
      serving.kill('SIGINT');
      expect((await serving.exited).code).toBe(130);
    });

    it('warns on stderr when cairn ui listens beyond this machine', async () => {
      const serving = startCairn(['ui', '--host', '0.0.0.0', '--port', '0', '--json'], suite.env);
      await expect.poll(() => serving.stdout, { timeout: 20_000, interval: 100 }).toMatch(/\n$/);
      expect(serving.stderr).toMatch(
        /^warning: cairn ui listens on 0\.0\.0\.0: anyone who can reach/,
      );
      serving.kill('SIGINT');
      expect((await serving.exited).code).toBe(130);
    });

    it('says a run is not found with exit 3, as a line or as JSON', () => {
      const text = printed('runs show no-such-run');
      expect(text.code).toBe(3);
      expect(text.stderr).toBe(
        'error RUN_NOT_FOUND: No run with id "no-such-run" exists in the store.\n',
      );
      const asJson = printed('runs timeline no-such-run --json');
      expect(asJson.code).toBe(3);
      expect(json(asJson.stderr)).toEqual({
        error: {
          code: 'RUN_NOT_FOUND',
          message: 'No run with id "no-such-run" exists in the store.',
          data: { runId: 'no-such-run' },
        },
      });
    });

    describeSteering(() => ({ suite, ids, run }));
  });
}
