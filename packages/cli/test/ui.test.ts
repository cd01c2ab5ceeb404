import { existsSync } from 'node:fs';
import { CairnError, defineAgent, defineTool, type DurableStore } from '@cairn/sdk';
import { scriptedModel, startTcpProxy } from '@cairn/testing';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeUiOnStores } from './fixtures/ui-server.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(chromiumPath);

/**
 * An agent of three trips whose second trip's tool waits for `release`: its first trip's checkpoint (and so its
 * first events) is written while the run is still going.
 */
function gatedAgent(store: DurableStore) {
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
  return { agent, release };
}

const answer = 'The order was refunded in full.';

/**
 * An agent of one trip whose model streams `answer` in pieces of five. Its first try fails after two pieces (the
 * provider dropped the stream: the call is made again, and what it said is superseded), and its second try holds
 * after three pieces until `release`, so the page is looked at while the trip is still talking.
 */
function talkingAgent(store: DurableStore) {
  let release = () => undefined as void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let tries = 0;
  const agent = defineAgent({
    name: 'talker',
    model: scriptedModel([{ text: answer }], {
      streamPieces: 5,
      onPiece: async ({ index }) => {
        if (index === 0) tries += 1;
        if (tries === 1 && index === 2) {
          throw new CairnError('MODEL_FAILED', 'the provider dropped the stream', {
            retryable: true,
          });
        }
        if (tries === 2 && index === 3) await released;
      },
    }),
    modelRetry: { maxAttempts: 2, initialDelayMs: 1 },
    durable: { store, owner: 'worker-talk', leaseMs: 10_000, stream: { coalesceChars: 1 } },
  });
  return { agent, release };
}

await describeUiOnStores('cairn_cli_ui', (fixture) => {
  // Outside CI a machine without Chromium skips these, saying so; in CI a missing Chromium fails them.
  const skipped = !haveChromium && process.env.CI === undefined;
  const title = skipped
    ? `the page in Chromium (skipped: no Chromium at ${chromiumPath}; apt-get install chromium, or set CHROMIUM_PATH)`
    : 'the page in Chromium';
  describe.skipIf(skipped)(title, () => {
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
        // The unknown run's page gets its 404s on purpose, and the cut connection breaks a stream.
        const expected =
          /status of 404|ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_(REFUSED|RESET)/;
        if (message.type() === 'error' && !expected.test(message.text())) {
          errors.push(message.text());
        }
      });
    });

    afterAll(async () => {
      await browser?.close();
      // A script error or a CSP refusal shows only in the browser's console.
      expect(errors).toEqual([]);
    });

    const openRun = (runId: string) =>
      page.goto(`${fixture().ui.url}#/runs/${encodeURIComponent(runId)}`);

    it('lists the runs', async () => {
      await page.goto(fixture().ui.url);
      await page.locator(`tr[data-run="${fixture().ids.queued}"]`).waitFor();
      for (const [runId, status] of [
        [fixture().ids.crashed, 'completed'],
        [fixture().ids.failed, 'failed'],
        [fixture().ids.waiting, 'waiting'],
        [fixture().ids.queued, 'queued'],
        [fixture().ids.child, 'completed'],
      ] as const) {
        const row = page.locator(`tr[data-run="${runId}"]`);
        expect(await row.getAttribute('data-status')).toBe(status);
        expect(await row.locator('a').textContent()).toBe(runId);
      }
      expect(await page.locator('tr[data-run]').count()).toBe(Object.keys(fixture().ids).length);
    });

    it("shows the crashed run's two attempts, the takeover between them and the outcome-unknown tool", async () => {
      await openRun(fixture().ids.crashed);
      await page.locator('.takeover').waitFor();
      const lanes = page.locator('.lane');
      expect(await lanes.count()).toBe(2);
      expect(await lanes.nth(0).getAttribute('data-epoch')).toBe('1');
      expect(await lanes.nth(0).locator('.lane-head').textContent()).toContain(
        'abandoned: taken over',
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
      await openRun(fixture().ids.planner);
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
      // The header's usage is the planner's own count, its child run's included.
      expect(await page.locator('dl.facts').textContent()).toContain(
        '300 in / 60 out tokens with its child runs',
      );
      // What the hotel node's agent said, under the node (its child run streamed it).
      const nodeText = page.locator(`li[data-child="${fixture().ids.child}"] section.live`);
      await nodeText.locator('.said', { hasText: 'Casa Azul, by the river.' }).waitFor();
      expect(await nodeText.locator('h3').textContent()).toMatch(/^node hotel/);
      const child = page.locator(`li[data-child="${fixture().ids.child}"] a`);
      await child.click();
      await page.locator('h1', { hasText: fixture().ids.child }).waitFor();
      expect(await page.locator('dl.facts').textContent()).toContain('parent');
    });

    it('shows run ids, names and inputs as text, never as markup', async () => {
      const runId = '<img src=x onerror="globalThis.pwned=1">';
      await fixture().client.start({ kind: 'agent', name: '<b>bold</b>' }, '<script>x</script>', {
        runId,
      });
      await page.goto(fixture().ui.url);
      const row = page.locator('tr[data-run]').filter({ hasText: runId });
      await row.waitFor();
      expect(await row.locator('td').nth(2).textContent()).toBe('<b>bold</b>');
      await row.locator('a').click();
      await page.locator('h1', { hasText: runId }).waitFor();
      await page.locator('dl.facts').waitFor();
      expect(await page.locator('main img, main b, main script').count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined();
    });

    it('shows a 404 for an unknown run', async () => {
      await openRun('no-such-run');
      await page.locator('[data-error="RUN_NOT_FOUND"]').waitFor();
    });

    it("appends a queued run's events as a worker performs it, without a reload", async () => {
      const { agent, release } = gatedAgent(fixture().store);
      await fixture().client.start(agent, 'go', { runId: 'ui-live' });
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

    it('shows what the running trip says as it says it, and what a call made again said as superseded', async () => {
      const { agent, release } = talkingAgent(fixture().store);
      await fixture().client.start(agent, 'go', { runId: 'ui-talk' });
      await openRun('ui-talk');
      await page.locator('#live-status.live').waitFor();
      // Nothing said yet: no Live section.
      expect(await page.locator('section.live').isVisible()).toBe(false);
      const unit = page.locator('section.live .unit[data-unit="trip-0/model"]');
      const running = agent.resume('ui-talk');
      try {
        // The second try is held after three pieces: they are on the page while the run runs.
        await unit.locator('.said:not(.superseded)', { hasText: 'The order was r' }).waitFor();
        await page.locator('dl.facts .badge.running').waitFor();
        expect(await unit.locator('.said:not(.superseded)').textContent()).toBe('The order was r');
      } finally {
        release();
      }
      await running;
      await unit.locator('.said:not(.superseded)', { hasText: answer }).waitFor();
      await page.locator('#live-status', { hasText: 'run ended' }).waitFor();
      // What the failed try said stays, struck through and said to be superseded; the new text follows it.
      expect(
        await unit
          .locator('.said, .superseded-note')
          .evaluateAll((nodes) => nodes.map((node) => [node.className, node.textContent])),
      ).toEqual([
        ['said superseded', 'The order '],
        ['superseded-note', 'superseded: this call was made again'],
        ['said', answer],
      ]);
      // Struck through as the reader sees it (this file is typed for Node: the browser's global is named here).
      type Styles = { getComputedStyle(node: unknown): { textDecorationLine: string } };
      expect(
        await unit
          .locator('.said.superseded')
          .evaluate(
            (node) => (globalThis as unknown as Styles).getComputedStyle(node).textDecorationLine,
          ),
      ).toBe('line-through');
      expect(await page.locator('section.live .unit').count()).toBe(1);
    });

    it('shows the text an ended run streamed, with the tools its model called', async () => {
      await openRun(fixture().ids.completed);
      const live = page.locator('section.live');
      await live.locator('.unit', { hasText: 'Booked CA985 and emailed Ada.' }).waitFor();
      expect(
        await live
          .locator('.tool-call')
          .evaluateAll((lines) => lines.map((line) => line.textContent)),
      ).toEqual(['calls search_flights → ok', 'calls book_flight → ok', 'calls send_email → ok']);
      expect(await live.locator('.said').last().textContent()).toBe(
        'Booked CA985 and emailed Ada.',
      );
      expect(await live.locator('.superseded').count()).toBe(0);
      // A run that streamed nothing has no Live section.
      await openRun(fixture().ids.crashed);
      await page.locator('.takeover').waitFor();
      expect(await page.locator('section.live').isVisible()).toBe(false);
    });

    it('catches up after the connection drops: the browser resumes from the last event id it had', async () => {
      const { agent, release } = gatedAgent(fixture().store);
      await fixture().client.start(agent, 'go', { runId: 'ui-reconnect' });
      const proxy = await startTcpProxy({
        host: '127.0.0.1',
        port: Number(new URL(fixture().ui.url).port),
      });
      try {
        const resumedFrom: (string | undefined)[] = [];
        page.on('request', (request) => {
          if (request.url().includes('/ui-reconnect/watch')) {
            void request.allHeaders().then((headers) => resumedFrom.push(headers['last-event-id']));
          }
        });
        await page.goto(`http://127.0.0.1:${proxy.port}/#/runs/ui-reconnect`);
        await page.locator('#live-status.live').waitFor();
        const running = agent.resume('ui-reconnect');
        try {
          await page.locator('.row[data-unit="trip-0"]').waitFor();
          await proxy.cut();
          await page.locator('#live-status.reconnecting').waitFor();
        } finally {
          release();
        }
        // The run ends while the page is cut off; what it missed arrives once the network is back.
        await running;
        await proxy.restore();
        await page.locator('#live-status', { hasText: 'run ended' }).waitFor();
        await page.locator('.marks', { hasText: 'ended completed' }).waitFor();
        for (const unit of ['trip-0', 'trip-1', 'trip-2']) {
          expect([unit, await page.locator(`.row[data-unit="${unit}"]`).count()]).toEqual([
            unit,
            1,
          ]);
        }
        expect(await page.locator('.lane').count()).toBe(1);
        // The first request had no id; a reconnect named the last event the page had before the cut.
        expect(resumedFrom[0]).toBeUndefined();
        expect(resumedFrom.slice(1).some((id) => Number(id) > 0)).toBe(true);
      } finally {
        await proxy.close();
      }
    });
  });
});
