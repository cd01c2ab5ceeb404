import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { bundleOptions, pageBundle } from './page-bundle.js';
import { pageCsp, pageEntry, pageHtml } from './page-html.js';
import { pageStyle } from './page-style.js';

const hash = (text: string) => createHash('sha256').update(text).digest('base64');

describe('the page', () => {
  it('runs only scripts of its own origin and its own inline style, by its hash', () => {
    expect(pageCsp.split('; ')).toContain("script-src 'self'");
    expect(pageCsp).toContain(`style-src 'sha256-${hash(pageStyle)}'`);
    expect(pageCsp).toContain("default-src 'none'");
    expect(pageCsp).not.toContain('unsafe-');
    expect(pageHtml).toContain(`<style>${pageStyle}</style>`);
  });

  it('loads its entry module from /ui/, and has no inline script', () => {
    expect(pageEntry).toBe('/ui/page.js');
    expect(pageHtml.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="/ui/page.js">']);
  });
});

describe('the page script', () => {
  const script = pageBundle();

  it('is the browser modules bundled into one, which imports nothing and parses as JavaScript', async () => {
    const code = await script();
    expect(code).not.toMatch(/^\s*import\b|\bfrom\s*['"]|\bimport\(/m);
    // Parsed as JavaScript: a parse error, or a type left in, is a syntactic diagnostic.
    const { diagnostics } = ts.transpileModule(code, {
      fileName: 'page.js',
      reportDiagnostics: true,
      compilerOptions: { module: ts.ModuleKind.ESNext, allowJs: true },
    });
    expect(diagnostics?.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual(
      [],
    );
    // Every module of browser/ is in it (esbuild names each one in a comment of the bundle).
    const modules = readdirSync(new URL('./browser/', import.meta.url)).filter(
      (file) => file.endsWith('.ts') && file !== 'api-types.ts',
    );
    for (const file of modules)
      expect([file, code]).toEqual([file, expect.stringContaining(`browser/${file}`)]);
  });

  it('never writes HTML from data', async () => {
    // The code, not its comments (which may say why it never does).
    const code = ts.transpileModule(await script(), {
      compilerOptions: { module: ts.ModuleKind.ESNext, removeComments: true },
    }).outputText;
    expect(code).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it('is built with the options it is bundled with from source', () => {
    const build = (
      JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        scripts: { build: string };
      }
    ).scripts.build;
    const flags = Object.entries(bundleOptions).map(([key, value]) =>
      typeof value === 'boolean'
        ? `--${key}`
        : `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}=${value}`,
    );
    for (const flag of flags) expect(build).toContain(flag);
    expect(build).toContain('esbuild src/ui/browser/page.ts');
    expect(build).toContain('--outfile=dist/ui/page.js');
  });
});
