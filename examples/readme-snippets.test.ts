import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  compilerOptionsOf,
  moduleOf,
  snippetsOf,
  typeErrors,
  type Prelude,
  type Snippet,
} from './readme-snippets.js';

// Every TypeScript snippet of a README is compiled against the packages' types, so the docs cannot drift from
// them. A snippet continues the story of the text around it: what it uses from an earlier one is declared for
// it (the preludes below), and only what it does not define itself. The first snippet of each package README is
// also compiled, and run where it needs no service, against the published tarballs by `pnpm pack-check`.
const root = fileURLToPath(new URL('..', import.meta.url));

const sdk = (type: string) => `import('@cairn/sdk').${type}`;
/** What the root README's snippets define for each other. */
const readme: Prelude = {
  model: `declare const model: ${sdk('Model')};`,
  store: `declare const store: import('@cairn/store-pg').PgStore;`,
  payments:
    'declare const payments: { refund(order: string, cents: number, key: string): Promise<{ id: string }> };',
  refund: `declare const refund: ${sdk("Tool<{ orderId: string; cents: number }, { id: string }, 'refund'>")};`,
  weatherTool: `declare const weatherTool: ${sdk('AnyTool')};`,
  conciergeAgent: `declare const conciergeAgent: ${sdk('Agent<string>')};`,
  support: `declare const support: ${sdk('Agent<string>')};`,
  trip: `declare const trip: ${sdk('Planner')};`,
  client: `declare const client: import('@cairn/worker').CairnClient;`,
  runId: 'declare const runId: string;',
  definePlanner: "import { definePlanner } from '@cairn/sdk';",
  createClient: "import { createClient } from '@cairn/worker';",
};
const documents: Array<{ document: string; prelude: Prelude }> = [
  { document: 'README.md', prelude: readme },
  { document: 'packages/sdk/README.md', prelude: {} },
  { document: 'packages/ai-sdk/README.md', prelude: {} },
  { document: 'packages/worker/README.md', prelude: {} },
  { document: 'packages/cli/README.md', prelude: {} },
  { document: 'packages/testing/README.md', prelude: {} },
  { document: 'packages/store-pg/README.md', prelude: {} },
  {
    document: 'packages/store-redis/README.md',
    prelude: {
      store: "declare const store: import('@cairn/store-redis').RedisStore;",
      redisStore: "import { redisStore } from '@cairn/store-redis';",
    },
  },
];
/** Modules a snippet imports from its own app (`./agents.js` in the worker README), by the folder they go in. */
const appModules = new Map([
  [
    'packages/worker/.readme/agents.ts',
    `import { defineAgent, type Model } from '@cairn/sdk';
declare const model: Model;
export const support = defineAgent({ name: 'support', model });`,
  ],
]);
/** Snippets of packages the workspace does not install (a provider's): `pack-check` compiles them. */
const installedElsewhere = (snippet: Snippet) => snippet.code.includes("from '@ai-sdk/openai'");

describe('the README snippets', () => {
  it('all compile against the packages’ types', () => {
    const modules = new Map<string, string>();
    const origins = new Map<string, { snippet: Snippet; offset: number }>();
    for (const { document, prelude } of documents) {
      // Beside its package (the root README's: beside the examples), so its imports resolve as there.
      const folder = join(
        root,
        document === 'README.md' ? 'examples' : dirname(document),
        '.readme',
      );
      for (const snippet of snippetsOf(root, document)) {
        if (installedElsewhere(snippet)) continue;
        const file = join(folder, `${snippet.line}.ts`);
        const { text, offset } = moduleOf(snippet, prelude);
        modules.set(file, text);
        origins.set(file, { snippet, offset });
      }
    }
    for (const [path, text] of appModules) modules.set(join(root, path), text);
    expect(origins.size).toBeGreaterThan(10);
    const errors = typeErrors(modules, compilerOptionsOf(join(root, 'examples', 'tsconfig.json')));
    const located = errors.map(({ file, line, message }) => {
      const origin = file === undefined ? undefined : origins.get(file);
      if (origin === undefined) return `${file ?? '(no file)'}:${line}: ${message}`;
      return `${origin.snippet.document}:${origin.snippet.line + line - origin.offset - 1}: ${message}`;
    });
    expect(located).toEqual([]);
  }, 120_000);
});
