import { existsSync } from 'node:fs';
import { createClient, type CairnClient } from '@cairn/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bundleChatPage, startChatServer, type ChatServer } from './fixtures/chat-server.js';
import { sleep, useProcessBackends, type WorkerProcess } from './fixtures/process-backends.js';
import { talkerAgent, talkerAnswer } from './fixtures/talking-agent.js';

// The real `useChat` of @ai-sdk/react (AI SDK 6 and 7) with Cairn's transport, in a real headless Chromium, on a
// run streamed by a real worker process on Postgres: a reload mid-stream, a SIGKILLed worker mid-stream, stop().
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Outside CI a machine without Chromium skips these, saying so; in CI (.ci/run installs it) they run.
const skipped = !existsSync(chromiumPath) && process.env.CI === undefined;
const backends = useProcessBackends('cairn_chat_browser');
const talker = talkerAgent();
// About six seconds per answer: time for a page to reload, or a worker to die, in the middle of it.
const workerEnv = { STREAM: '1', PIECE_MS: '15', LEASE_MS: '2000', CONCURRENCY: '4' };

let browser: Browser;
beforeAll(async () => {
  if (!skipped) browser = await chromium.launch({ executablePath: chromiumPath });
});
afterAll(async () => {
  await browser?.close();
});

/** What the chat page shows: the answer's visible text, useChat's status, superseded parts it dropped. */
async function shown(page: Page) {
  const chat = page.locator('#chat');
  const [text, status, superseded, error, chatId] = await Promise.all([
    page.locator('#answer').textContent(),
    chat.getAttribute('data-status'),
    chat.getAttribute('data-superseded'),
    chat.getAttribute('data-error'),
    chat.getAttribute('data-chat-id'),
  ]);
  return {
    text: text ?? '',
    status: status ?? '',
    superseded: Number(superseded),
    error: error ?? '',
    chatId: chatId ?? '',
  };
}

/**
 * Polls the page until `done` holds, checking at every look that what it shows is a prefix of `answer`: no text
 * twice, no text of another attempt left standing, at any moment.
 */
async function watch(
  page: Page,
  answer: string,
  done: (state: Awaited<ReturnType<typeof shown>>) => boolean,
) {
  for (;;) {
    const state = await shown(page);
    expect(state.error).toBe('');
    expect(
      answer.startsWith(state.text),
      `shown text is not a prefix of the answer: ${state.text.slice(-80)}`,
    ).toBe(true);
    if (done(state)) return state;
    await sleep(50);
  }
}

describe.skipIf(skipped).each([6, 7] as const)(
  'useChat of AI SDK %i with cairnChatTransport in Chromium',
  (aiSdk) => {
    let script: string;
    let server: ChatServer | undefined;
    let page: Page | undefined;
    beforeAll(async () => {
      script = await bundleChatPage(aiSdk);
    });
    afterEach(async () => {
      await page?.close();
      await server?.close();
      page = undefined;
      server = undefined;
    });

    /** A backend with one streaming worker process, the chat app on it, and the page open. */
    async function open(): Promise<{ client: CairnClient; worker: WorkerProcess; page: Page }> {
      const backend = await backends.open('postgres');
      const client = createClient({ store: backend.store });
      const worker = await backends.worker('w-1', workerEnv);
      server = await startChatServer({ client, agent: talker, script });
      page = await browser.newPage();
      const pageErrors: Error[] = [];
      page.on('pageerror', (error) => pageErrors.push(error));
      await page.goto(server.url);
      await page.waitForSelector('#chat');
      expect(pageErrors).toEqual([]);
      return { client, worker, page };
    }

    async function ask(page: Page, prompt: string) {
      await page.fill('#prompt', prompt);
      await page.click('#send');
    }

    it('streams the answer, and after a reload mid-stream goes on with nothing shown twice', async () => {
      const { client, page } = await open();
      const answer = talkerAnswer('reload');
      await ask(page, 'reload');
      // Streaming: part of the answer is on the page, not all of it.
      const before = await watch(page, answer, (state) => state.text.length > 2_000);
      expect(before.text.length).toBeLessThan(answer.length);
      await page.reload();
      await page.waitForSelector('#chat');
      const after = await watch(
        page,
        answer,
        (state) => state.text === answer && state.status === 'ready',
      );
      expect(after.chatId).toBe(before.chatId);
      expect(await client.result(server!.runOf(before.chatId)!)).toBe(answer);
    }, 60_000);

    it('drops the text of a worker SIGKILLed mid-stream and shows the answer the next worker gives', async () => {
      const { client, worker, page } = await open();
      const answer = talkerAnswer('crash');
      await ask(page, 'crash');
      const before = await watch(page, answer, (state) => state.text.length > 2_000);
      worker.kill('SIGKILL');
      await worker.exited;
      await backends.worker('w-2', workerEnv);
      // The new holder's first chunk supersedes the dead one's: its text goes, the answer comes again from the start.
      const after = await watch(
        page,
        answer,
        (state) => state.text === answer && state.status === 'ready',
      );
      expect(after.superseded).toBeGreaterThan(0);
      expect(await client.result(server!.runOf(before.chatId)!)).toBe(answer);
    }, 60_000);

    it('cancels the run when the user stops it', async () => {
      const { client, page } = await open();
      const answer = talkerAnswer('stop');
      await ask(page, 'stop');
      const before = await watch(page, answer, (state) => state.text.length > 2_000);
      await page.click('#stop');
      const runId = server!.runOf(before.chatId)!;
      while ((await client.get(runId))?.status !== 'cancelled') await sleep(50);
      const stopped = await watch(page, answer, (state) => state.status === 'ready');
      expect(stopped.text.length).toBeLessThan(answer.length);
    }, 60_000);
  },
);
