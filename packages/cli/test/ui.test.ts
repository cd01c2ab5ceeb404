import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { defineAgent, defineTool, type DurableStore, type RunEvent } from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import { redisStore } from '@cairn/store-redis';
import { scriptedModel, useTestDatabase } from '@cairn/testing';
import { createClient, type CairnClient } from '@cairn/worker';
import { Redis } from 'ioredis';
import { chromium, type Browser, type Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveUi, type UiServer } from '../src/ui/serve-ui.js';
import { seedScenarios, type Scenarios } from './fixtures/scenarios.js';

const database = useTestDatabase({ prefix: 'cairn_cli_ui' });
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(chromiumPath);

/** A store the page is shown over, and how to let it go. */
interface OpenedStore {
  store: DurableStore;
  close(): Promise<void>;
}

async function openPg(): Promise<OpenedStore> {
  const sql = postgres(database().url, { max: 5, onnotice: () => undefined });
  const store = pgStore({ sql });
  await store.migrate();
  return {
    store,
    close: async () => {
      await store.close();
      await sql.end({ timeout: 5 });
    },
  };
}

async function openRedis(): Promise<OpenedStore> {
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const prefix = `cairn-test:cli-ui:${randomUUID()}`;
  return {
    store: redisStore({ client, prefix }),
    close: async () => {
      // SCAN is fine in a test's cleanup.
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
        cursor = next;
        await Promise.all(keys.map((key) => client.unlink(key)));
      } while (cursor !== '0');
      client.disconnect();
    },
  };
}

/** Why Redis cannot be used here, or undefined when it answers. */
async function redisUnreachable(): Promise<string | undefined> {
  const client = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (error) {
    return `no Redis at ${redisUrl} (${(error as Error).message}); set REDIS_URL`;
  } finally {
    client.disconnect();
  }
}

// One store's page at a time: each `describe` below opens its store and server in its own beforeAll, and
// vitest runs a file's describes one after the other.
let opened: OpenedStore | undefined;
let store: DurableStore;
let client: CairnClient;
let ids: Scenarios;
let ui: UiServer;

const api = (path: string) => new URL(path, ui.url);
const runPath = (runId: string) => `/api/runs/${encodeURIComponent(runId)}`;

/** A GET through node:http, which (unlike fetch) may set `Host` and `Last-Event-ID`. */
function get(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(api(path), { headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          type: String(response.headers['content-type']),
          body,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** The messages of a whole Server-Sent Events body (the stream ends when the watched run has ended). */
function parseSse(body: string): { id?: string; event: string; data: string }[] {
  return body
    .split('\n\n')
    .filter((block) => /^(id|event|data):/m.test(block))
    .map((block) => {
      const field = (name: string) =>
        block
          .split('\n')
          .find((line) => line.startsWith(`${name}: `))
          ?.slice(name.length + 2);
      const id = field('id');
      return {
        ...(id === undefined ? {} : { id }),
        event: field('event') ?? 'message',
        data: field('data') ?? '',
      };
    });
}

function describeUi(name: string, open: () => Promise<OpenedStore>): void {
  describe(name, () => {
    beforeAll(async () => {
      opened = await open();
      store = opened.store;
      ids = await seedScenarios(store, 'ui');
      client = createClient({ store });
      ui = await serveUi({ client, pollMs: 50 });
    });

    afterAll(async () => {
      await ui?.close();
      await opened?.close();
    });

    describe('the API', () => {
      it('lists the runs without their checkpoints, and filters them', async () => {
        const all = await get('/api/runs');
        expect(all.status).toBe(200);
        const runs = (JSON.parse(all.body) as { runs: { runId: string; snapshot?: unknown }[] })
          .runs;
        expect(runs.map((run) => run.runId).sort()).toEqual(Object.values(ids).sort());
        expect(runs.every((run) => run.snapshot === undefined)).toBe(true);

        const planners = JSON.parse(
          (await get('/api/runs?kind=planner&status=completed,failed')).body,
        );
        expect(planners.runs.map((run: { runId: string }) => run.runId)).toEqual([ids.planner]);
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
          `${runPath(ids.crashed)}/events?after=-1`,
          '/api/runs/%E0%A4%A',
        ]) {
          const answer = await get(path);
          expect([path, answer.status]).toEqual([path, 400]);
          expect(JSON.parse(answer.body).error.code).toBe('INVALID_ARGUMENT');
        }
        expect((await get('/api/nothing')).status).toBe(404);
      });

      it("shows a planner's plan and child run, and a run's events after a cursor", async () => {
        const { run } = JSON.parse((await get(runPath(ids.planner))).body);
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
            runId: ids.child,
            kind: 'agent',
            name: 'concierge',
            status: 'completed',
            node: 'hotel',
          },
        ]);
        const all = JSON.parse((await get(`${runPath(ids.crashed)}/events`)).body)
          .events as RunEvent[];
        const later = JSON.parse(
          (await get(`${runPath(ids.crashed)}/events?after=${all[3]!.seq}`)).body,
        ).events as RunEvent[];
        expect(later).toEqual(all.slice(4));
      });

      it('streams events with their seq as id, and resumes after Last-Event-ID without repeating one', async () => {
        const expected = (await client.events(ids.crashed)).map((event) => event.seq);
        expect(expected.length).toBeGreaterThan(6);
        const first = parseSse((await get(`${runPath(ids.crashed)}/watch`)).body);
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
            await get(`${runPath(ids.crashed)}/watch?after=0`, {
              'Last-Event-ID': String(expected[4]),
            })
          ).body,
        ).filter((message) => message.event === 'message');
        expect(resumed.map((message) => Number(message.id))).toEqual(expected.slice(5));
      });

      it('refuses a Host that is not this machine, and writes', async () => {
        expect((await get('/', { Host: 'attacker.example:80' })).status).toBe(403);
        expect((await get('/', { Host: `localhost:${api('/').port}` })).status).toBe(200);
        const post = await fetch(api('/api/runs'), { method: 'POST' });
        expect(post.status).toBe(405);
      });
    });

    describe.skipIf(!haveChromium && process.env.CI === undefined)('the page in Chromium', () => {
      let browser: Browser;
      let page: Page;
      const errors: string[] = [];

      beforeAll(async () => {
        if (!haveChromium) {
          throw new Error(
            `No Chromium at ${chromiumPath}: install it (apt-get install chromium) or set CHROMIUM_PATH.`,
          );
        }
        browser = await chromium.launch({ executablePath: chromiumPath });
        page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
        page.on('pageerror', (error) => errors.push(error.message));
        page.on('console', (message) => {
          // The unknown run's page gets its 404s on purpose.
          if (message.type() === 'error' && !message.text().includes('status of 404')) {
            errors.push(message.text());
          }
        });
      });

      afterAll(async () => {
        await browser?.close();
        // A script error or a CSP refusal shows only in the browser's console.
        expect(errors).toEqual([]);
      });

      const openRun = (runId: string) => page.goto(`${ui.url}#/runs/${encodeURIComponent(runId)}`);

      it('lists the runs', async () => {
        await page.goto(ui.url);
        await page.locator(`tr[data-run="${ids.queued}"]`).waitFor();
        for (const [runId, status] of [
          [ids.crashed, 'completed'],
          [ids.failed, 'failed'],
          [ids.waiting, 'waiting'],
          [ids.queued, 'queued'],
          [ids.child, 'completed'],
        ] as const) {
          const row = page.locator(`tr[data-run="${runId}"]`);
          expect(await row.getAttribute('data-status')).toBe(status);
          expect(await row.locator('a').textContent()).toBe(runId);
        }
        expect(await page.locator('tr[data-run]').count()).toBe(Object.keys(ids).length);
      });

      it("shows the crashed run's two attempts, the takeover between them and the outcome-unknown tool", async () => {
        await openRun(ids.crashed);
        await page.locator('.takeover').waitFor();
        const lanes = page.locator('.lane');
        expect(await lanes.count()).toBe(2);
        expect(await lanes.nth(0).getAttribute('data-epoch')).toBe('1');
        expect(await lanes.nth(0).locator('.lane-head').textContent()).toContain(
          'abandoned: crashed',
        );
        expect(await lanes.nth(1).locator('.lane-head').textContent()).toContain('worker-b');
        expect(await page.locator('.takeover').getAttribute('data-kind')).toBe('takeover');
        expect(await page.locator('.takeover').textContent()).toContain(
          'worker-b took the run over from worker-a',
        );
        const unknown = page.locator('.effect[data-outcome="unknown"]');
        expect(await unknown.count()).toBe(1);
        expect(await unknown.textContent()).toContain('execute_tool book_flight');
        expect(await unknown.locator('.outcome').textContent()).toBe('outcome unknown');
        expect(await unknown.locator('.outcome').isVisible()).toBe(true);
        // The status badge of the header, and the recovery.
        expect(await page.locator('dl.facts').textContent()).toContain('recoveries1');
      });

      it("draws a planner's plan DAG and links its child run", async () => {
        await openRun(ids.planner);
        await page.locator('.dag path[data-edge="weather->hotel"]').waitFor({ state: 'attached' });
        const states = await page
          .locator('.dag .node')
          .evaluateAll((nodes) =>
            nodes.map((node) => [node.getAttribute('data-node'), node.getAttribute('data-state')]),
          );
        expect(states).toEqual([
          ['weather', 'completed'],
          ['flights', 'completed'],
          ['hotel', 'completed'],
        ]);
        const child = page.locator(`li[data-child="${ids.child}"] a`);
        await child.click();
        await page.locator('h1', { hasText: ids.child }).waitFor();
        expect(await page.locator('dl.facts').textContent()).toContain('parent');
      });

      it('shows a 404 for an unknown run', async () => {
        await openRun('no-such-run');
        await page.locator('[data-error="RUN_NOT_FOUND"]').waitFor();
      });

      it("appends a queued run's events as a worker performs it, without a reload", async () => {
        let release = () => undefined as void;
        const released = new Promise<void>((resolve) => (release = resolve));
        const tool = (name: string, wait: boolean) =>
          defineTool({
            name,
            description: name,
            input: z.object({}),
            execute: async () => {
              if (wait) await released;
              return 'ok';
            },
          });
        const agent = defineAgent({
          name: 'live',
          model: scriptedModel([
            { toolCalls: [{ id: 'fast', name: 'fast', args: {} }] },
            { toolCalls: [{ id: 'slow', name: 'slow', args: {} }] },
            { text: 'done' },
          ]),
          tools: [tool('fast', false), tool('slow', true)],
          durable: { store, owner: 'worker-live', leaseMs: 10_000 },
        });
        await client.start(agent, 'go', { runId: 'ui-live' });
        await openRun('ui-live');
        await page.locator('#live-status.live').waitFor();
        expect(await page.locator('.lane').count()).toBe(0);
        await page.evaluate(
          () => ((globalThis as unknown as { loadedOnce: boolean }).loadedOnce = true),
        );

        const running = agent.resume('ui-live');
        try {
          // The first trip's checkpoint arrives while the second trip's tool is held.
          await page.locator('.row[data-unit="trip-0"]').waitFor();
          expect(await page.locator('.lane').count()).toBe(1);
          await page.locator('dl.facts .badge.running').waitFor();
        } finally {
          release();
        }
        await running;
        await page.locator('.marks', { hasText: 'ended completed' }).waitFor();
        await page.locator('#live-status', { hasText: 'run ended' }).waitFor();
        await page.locator('dl.facts .badge.completed').waitFor();
        expect(await page.locator('.row[data-unit="trip-2"]').count()).toBe(1);
        expect(
          await page.evaluate(() => (globalThis as unknown as { loadedOnce?: boolean }).loadedOnce),
        ).toBe(true);
      });
    });
  });
}

describeUi('on Postgres', openPg);
const redisReason = await redisUnreachable();
if (redisReason === undefined) describeUi('on Redis', openRedis);
else describe.skip(`on Redis: skipped, ${redisReason}`, () => undefined);
