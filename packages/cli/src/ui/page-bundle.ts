import { readFile } from 'node:fs/promises';

/**
 * The page's script: its TypeScript modules (`browser/`, entry `page.ts`) bundled into one ES module by esbuild.
 * Built, this is `dist/ui/page-bundle.js`, and the package's build wrote the bundle beside it as `page.js`. Run
 * from source (a test, `tsx`), it bundles the modules itself the first time the page asks: esbuild is a dev
 * dependency, imported only then, so the published package never needs it.
 */
const fromSource = import.meta.url.endsWith('.ts');

/** What bundles the page: `esbuild`'s options for the build (the `build` script passes the same ones). */
export const bundleOptions = {
  bundle: true,
  format: 'esm',
  target: 'es2022',
  platform: 'browser',
  legalComments: 'none',
} as const;

/** The page's script, read (or bundled) once per server; a failure is tried again at the next request. */
export function pageBundle(): () => Promise<string> {
  let bundled: Promise<string> | undefined;
  return () => {
    if (bundled === undefined) {
      bundled = fromSource
        ? bundleFromSource()
        : readFile(new URL('./page.js', import.meta.url), 'utf8');
      bundled.catch(() => (bundled = undefined));
    }
    return bundled;
  };
}

async function bundleFromSource(): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    ...bundleOptions,
    entryPoints: [new URL('./browser/page.ts', import.meta.url).pathname],
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}
