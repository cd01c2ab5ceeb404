/**
 * Writes docs/ui-timeline.png, the README's picture of `cairn ui`: the timeline of a run that crashed while a
 * booking was in flight and was taken over. It seeds the cli test's scenarios into a memory store (so it needs
 * no database), serves the page, and has Chromium (CHROMIUM_PATH, else /usr/bin/chromium) take the shot.
 *
 *   scripts/with-node.sh 22 pnpm --filter @cairn/cli exec tsx --conditions=@cairn/source scripts/ui-screenshot.ts
 *
 * With `--serve` it keeps the page open instead, for a look by hand.
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { memoryStore } from '@cairn/sdk';
import { createClient } from '@cairn/worker';
import { chromium } from 'playwright-core';
import { seedScenarios } from '../test/fixtures/scenarios.js';
import { serveUi } from '../src/ui/serve-ui.js';

const store = memoryStore();
const ids = await seedScenarios(store, 'trip');
const ui = await serveUi({ client: createClient({ store }) });
const page = `${ui.url}#/runs/${encodeURIComponent(ids.crashed)}`;

if (process.argv.includes('--serve')) {
  console.log(`Serving ${ui.url} (the crashed run: ${page}); Ctrl-C ends it.`);
} else {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  });
  try {
    const tab = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    await tab.goto(page);
    await tab.locator('.takeover').waitFor();
    const out = fileURLToPath(new URL('../../../docs/ui-timeline.png', import.meta.url));
    await mkdir(fileURLToPath(new URL('../../../docs/', import.meta.url)), { recursive: true });
    await tab.screenshot({ path: out, fullPage: true });
    console.log(`Wrote ${out}`);
  } finally {
    await browser.close();
    await ui.close();
  }
}
