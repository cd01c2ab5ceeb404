import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Tests run in Vite's SSR environment, which reads `ssr.resolve.conditions`;
// top-level `resolve.conditions` only reaches the client environment and does not
// affect node tests. Adding `source` makes `@cairn/*` imports load `src/index.ts`
// without a build; the defaults are kept so other packages resolve as usual.
// `module` is dropped: it makes Vite pick packages' ESM builds that Node itself cannot load (the
// @opentelemetry/api 1.9 ESM build imports paths without extensions), while Node's own resolution is what
// users get.
const conditions = [
  'source',
  ...defaultServerConditions.filter((condition) => condition !== 'module'),
];

export default defineConfig({
  ssr: {
    resolve: {
      conditions,
    },
  },
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'examples/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    server: {
      deps: {
        // Vitest also hands `--conditions source` to Node, which then loads the TypeScript `source` export
        // that eventsource-parser (under the AI SDK) ships. Inlined, these go through Vite, which compiles it.
        inline: ['ai', /[\\/]@ai-sdk[\\/]/, 'eventsource-parser'],
      },
    },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
