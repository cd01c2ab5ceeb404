import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Tests run in Vite's SSR environment, which reads `ssr.resolve.conditions`;
// top-level `resolve.conditions` only reaches the client environment and does not
// affect node tests. Adding `source` makes `@cairn/*` imports load `src/index.ts`
// without a build; the defaults are kept so other packages resolve as usual.
const conditions = ['source', ...defaultServerConditions];

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
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
