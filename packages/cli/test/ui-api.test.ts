import { request } from 'node:http';
import type { RunEvent } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { serveUi } from '../src/ui/serve-ui.js';
import { getFrom, parseSse, runPath } from './fixtures/http-get.js';
import { describeUiOnStores } from './fixtures/ui-server.js';

await describeUiOnStores('cairn_cli_ui_api', (fixture) => {
  describe('the API', () => {
    const get = (path: string, headers?: Record<string, string>) =>
      getFrom(fixture().ui.url, path, headers);

    it('lists the runs without their checkpoints, and filters them', async () => {
      const all = await get('/api/runs');
      expect(all.status).toBe(200);
      const runs = (JSON.parse(all.body) as { runs: { runId: string; snapshot?: unknown }[] }).runs;
      expect(runs.map((run) => run.runId).sort()).toEqual(Object.values(fixture().ids).sort());
      expect(runs.every((run) => run.snapshot === undefined)).toBe(true);

      const planners = JSON.parse(
        (await get('/api/runs?kind=planner&status=completed,failed')).body,
      );
      expect(planners.runs.map((run: { runId: string }) => run.runId)).toEqual([
        fixture().ids.planner,
      ]);

      // The store lists oldest first: a limit keeps the first runs seeded, and says it was reached.
      const two = JSON.parse((await get('/api/runs?limit=2')).body);
      expect(two.limit).toBe(2);
      expect(two.runs.map((run: { runId: string }) => run.runId)).toEqual([
        fixture().ids.completed,
        fixture().ids.crashed,
      ]);
    });

    it('answers 404 with the error code for an unknown run, 400 for bad input', async () => {
      for (const path of [
        runPath('nope'),
        `${runPath('nope')}/events`,
        `${runPath('nope')}/watch`,
      ]) {
        const answer = await get(path);
        expect([path, answer.status, answer.type]).toEqual([
          path,
          404,
          'application/json; charset=utf-8',
        ]);
        expect(JSON.parse(answer.body).error.code).toBe('RUN_NOT_FOUND');
      }
      for (const path of [
        '/api/runs?limit=0',
        '/api/runs?status=sleeping',
        `${runPath(fixture().ids.crashed)}/events?after=-1`,
        '/api/runs/%E0%A4%A',
      ]) {
        const answer = await get(path);
        expect([path, answer.status]).toEqual([path, 400]);
        expect(JSON.parse(answer.body).error.code).toBe('INVALID_ARGUMENT');
      }
      expect((await get('/api/nothing')).status).toBe(404);
    });

    it("shows a planner's plan and child run, and a run's events after a cursor", async () => {
      const { run } = JSON.parse((await get(runPath(fixture().ids.planner))).body);
      expect(run.snapshot).toBeUndefined();
      expect(
        run.plan.nodes.map((node: { id: string; layer: number }) => [node.id, node.layer]),
      ).toEqual([
        ['weather', 0],
        ['hotel', 1],
        ['flights', 0],
      ]);
      expect(run.children).toEqual([
        {
          runId: fixture().ids.child,
          kind: 'agent',
          name: 'concierge',
          status: 'completed',
          node: 'hotel',
        },
      ]);
      const all = JSON.parse((await get(`${runPath(fixture().ids.crashed)}/events`)).body)
        .events as RunEvent[];
      const later = JSON.parse(
        (await get(`${runPath(fixture().ids.crashed)}/events?after=${all[3]!.seq}`)).body,
      ).events as RunEvent[];
      expect(later).toEqual(all.slice(4));
    });

    it('streams events with their seq as id, and resumes after Last-Event-ID without repeating one', async () => {
      const expected = (await fixture().client.events(fixture().ids.crashed)).map(
        (event) => event.seq,
      );
      expect(expected.length).toBeGreaterThan(6);
      const first = parseSse((await get(`${runPath(fixture().ids.crashed)}/watch`)).body);
      expect(first.at(-1)?.event).toBe('end');
      const messages = first.filter((message) => message.event === 'message');
      expect(messages.map((message) => Number(message.id))).toEqual(expected);
      expect(messages.map((message) => (JSON.parse(message.data) as RunEvent).seq)).toEqual(
        expected,
      );

      // A browser that lost the connection after the fifth event comes back with its id; the URL's `after`
      // (where it first started) is overridden by it.
      const resumed = parseSse(
        (
          await get(`${runPath(fixture().ids.crashed)}/watch?after=0`, {
            'Last-Event-ID': String(expected[4]),
          })
        ).body,
      ).filter((message) => message.event === 'message');
      expect(resumed.map((message) => Number(message.id))).toEqual(expected.slice(5));
    });

    it("serves the page's script, its modules bundled, as JavaScript, and no other file", async () => {
      const page = await get('/');
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      expect(page.body).toContain('<script type="module" src="/ui/page.js"></script>');
      const entry = await get('/ui/page.js');
      expect([
        entry.status,
        entry.type,
        entry.headers['cache-control'],
        entry.headers['x-content-type-options'],
      ]).toEqual([200, 'text/javascript; charset=utf-8', 'no-store', 'nosniff']);
      // One script: the run page's module is in it, and nothing is imported.
      expect(entry.body).toContain('src/ui/browser/run-page.ts');
      expect(entry.body).not.toMatch(/\bfrom\s*['"]/);
      for (const path of [
        '/ui/run-page.js',
        '/ui/nope.js',
        '/ui/page.ts',
        '/ui/tsconfig.js',
        '/ui/browser/page.js',
        '/ui/..%2Fserve-ui.js',
        '/ui/%2E%2E/serve-ui.js',
      ]) {
        const answer = await get(path);
        expect([path, answer.status]).toEqual([path, 404]);
      }
    });

    it('refuses a Host that is not this machine, and writes', async () => {
      expect((await get('/', { Host: 'attacker.example:80' })).status).toBe(403);
      // A name that only starts like a loopback address is another machine's (DNS rebinding).
      for (const host of [
        '127.0.0.1.evil.example',
        '127.evil.example:80',
        'localhost.evil.example',
      ]) {
        expect([host, (await get('/api/runs', { Host: host })).status]).toEqual([host, 403]);
      }
      for (const host of ['127.0.0.1', '127.1.2.3:8080', '[::1]:80', 'LOCALHOST']) {
        expect([host, (await get('/api/runs', { Host: host })).status]).toEqual([host, 200]);
      }
      expect((await get('/', { Host: `localhost:${new URL(fixture().ui.url).port}` })).status).toBe(
        200,
      );
      const post = await fetch(new URL('/api/runs', fixture().ui.url), { method: 'POST' });
      expect(post.status).toBe(405);
    });

    it('closes while a browser still watches a run', async () => {
      const server = await serveUi({ client: fixture().client, pollMs: 50 });
      // A waiting run's watch never ends by itself; the server closes once its first events are out.
      const watching = new Promise<string>((resolve, reject) => {
        const path = `${runPath(fixture().ids.waiting)}/watch`;
        request(new URL(path, server.url), (response) => {
          let body = '';
          let closing: Promise<void> | undefined;
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            body += chunk;
            if (body.includes('\ndata: ') && closing === undefined) {
              closing = server.close();
            }
          });
          response.on('end', () => {
            // The stream ended because the server closed, and the server's close resolves.
            (closing ?? Promise.reject(new Error('the stream ended by itself'))).then(
              () => resolve(body),
              reject,
            );
          });
        })
          .on('error', reject)
          .end();
      });
      const events = parseSse(await watching).filter((message) => message.event === 'message');
      expect(events).not.toEqual([]);
    });
  });
});
