import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Tests run in Vite's SSR environment, which reads `ssr.resolve.conditions` (top-level `resolve.conditions`
// only reaches the client environment). `@cairn/source` makes `@cairn/*` imports load `src/index.ts` without
// a build; the condition is namespaced because plain `source` is also used by other packages
// (eventsource-parser ships TypeScript under it). `module` is dropped: it makes Vite pick packages' ESM
// builds that Node itself cannot load (the @opentelemetry/api 1.9 ESM build imports paths without
// extensions), while Node's own resolution is what users get.
const conditions = [
  '@cairn/source',
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
      'bench/test/**/*.test.ts',
      'system-tests/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
