import { existsSync } from 'node:fs';
import { memoryStore, protectPayloads, sealedPrefix } from '@cairn/sdk';
import { createClient } from '@cairn/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hideEncryptedPayloads } from '../src/encrypted-store.js';
import { serveUi, type UiServer } from '../src/ui/serve-ui.js';
import { codec } from './fixtures/codec-module.js';
import { markerPrefix, seedEncryptedRuns, type EncryptedRuns } from './fixtures/encrypted-runs.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Outside CI a machine without Chromium skips these, saying so; in CI a missing Chromium fails them.
const skipped = !existsSync(chromiumPath) && process.env.CI === undefined;
const title = skipped
  ? `the page of encrypted runs (skipped: no Chromium at ${chromiumPath}; set CHROMIUM_PATH)`
  : 'the page of encrypted runs, served without their codec';

describe.skipIf(skipped)(title, () => {
  let ids: EncryptedRuns;
  let ui: UiServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const raw = memoryStore();
    ids = await seedEncryptedRuns(protectPayloads(raw, { codec }));
    // As `cairn ui` without --codec serves it.
    ui = await serveUi({ client: createClient({ store: hideEncryptedPayloads(raw) }), pollMs: 50 });
    browser = await chromium.launch({ executablePath: chromiumPath });
    page = await browser.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await ui?.close();
  });

  /** What the page shows, once `ready` is on it: never a marker or a ciphertext. */
  const shownText = async (ready: string): Promise<string> => {
    await page.locator(ready).first().waitFor();
    const text = await page.locator('body').innerText();
    expect(text).not.toContain(markerPrefix);
    expect(text).not.toContain(sealedPrefix);
    return text;
  };

  it('lists the runs, marked encrypted, saying once that --codec reads them', async () => {
    await page.goto(ui.url);
    const text = await shownText(`tr[data-run="${ids.waiting}"]`);
    expect(text).toContain('the payloads of 3 runs are encrypted: start cairn ui with --codec');
    const rows = await page.locator('tr[data-run] td.id').allInnerTexts();
    expect(rows.sort()).toEqual(
      Object.values(ids)
        .sort()
        .map((runId) => `${runId}\npayloads encrypted`),
    );
  });

  it("shows a run's facts, its error and its live text as (encrypted), and why it has no timeline", async () => {
    await page.goto(`${ui.url}#/runs/${encodeURIComponent(ids.completed)}`);
    await page.locator('.said .encrypted').first().waitFor();
    const completed = await shownText('.notice[data-encrypted]');
    expect(completed).toContain("This run's payloads are encrypted, shown as (encrypted)");
    expect(completed).toContain('Its history is encrypted with its payloads.');
    expect(await page.locator('pre.output').innerText()).toBe('"(encrypted)"');

    await page.goto(`${ui.url}#/runs/${encodeURIComponent(ids.failed)}`);
    const failed = await shownText('[data-error-code="MODEL_FAILED"]');
    expect(failed).toMatch(/MODEL_FAILED \(encrypted\)/);
  });
});
