#!/usr/bin/env node
// What a user installs: builds and packs every published package, lints each tarball (publint, attw), installs
// the tarballs with npm into a fresh project outside the workspace, type-checks that project against the
// published types (NodeNext, strict, no skipLibCheck), runs a short agent on the memory store, compiles (and
// where it needs no service, runs) each package README's example after installing what its install line
// names, and runs a fresh app on Postgres: `cairn-worker migrate` and `cairn-worker` on a .ts module, a client
// process that starts a run by name, SIGTERM (pack-check/worker-bin.mjs).
//
//   node scripts/pack-check.mjs [--no-build] [--keep]
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkWorkerBin } from './pack-check/worker-bin.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const fixtures = fileURLToPath(new URL('./pack-check/', import.meta.url));
const args = new Set(process.argv.slice(2));
const started = Date.now();

/** README examples that run as they are; the others need a service (Postgres, a model provider's key). */
const runnableReadmes = { sdk: 'node', worker: 'node', testing: 'vitest' };

function step(title) {
  console.log(`\n▸ ${title} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
}

function fail(message) {
  console.error(`\n✗ pack-check failed: ${message}`);
  process.exit(1);
}

function run(command, commandArgs, options = {}) {
  const result = spawnSync(command, commandArgs, {
    stdio: options.capture ? 'pipe' : 'inherit',
    encoding: 'utf8',
    cwd: options.cwd ?? root,
    env: { ...process.env, ...options.env },
  });
  if (result.status !== 0) {
    if (options.capture) process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
    fail(`${command} ${commandArgs.join(' ')} exited with ${result.status ?? result.signal}`);
  }
  return result.stdout ?? '';
}

const bin = (name) => join(root, 'node_modules', '.bin', name);

// 1. Build and pack.
if (!args.has('--no-build')) {
  step('pnpm build');
  run('pnpm', ['build']);
}
const packages = readdirSync(join(root, 'packages'))
  .map((dir) => ({ dir, path: join(root, 'packages', dir) }))
  .filter(({ path }) => existsSync(join(path, 'package.json')))
  .map((entry) => ({
    ...entry,
    manifest: JSON.parse(readFileSync(join(entry.path, 'package.json'), 'utf8')),
  }))
  .filter(({ manifest }) => manifest.private !== true);
if (packages.length === 0) fail('no publishable package under packages/');

const work = mkdtempSync(join(tmpdir(), 'cairn-pack-check-'));
const tarballs = join(work, 'tarballs');
const project = join(work, 'project');
mkdirSync(tarballs);
mkdirSync(join(project, 'src'), { recursive: true });
process.on('exit', () => {
  if (args.has('--keep')) console.log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
});

step(`pnpm pack: ${packages.map(({ manifest }) => manifest.name).join(', ')}`);
for (const pkg of packages) {
  run('pnpm', ['pack', '--pack-destination', tarballs], { cwd: pkg.path, capture: true });
  const file = `${pkg.manifest.name.replace(/^@/, '').replace('/', '-')}-${pkg.manifest.version}.tgz`;
  pkg.tarball = join(tarballs, file);
  if (!existsSync(pkg.tarball)) fail(`pnpm pack wrote no ${file}`);
  const files = new Set(run('tar', ['-tzf', pkg.tarball], { capture: true }).split('\n'));
  const text = run('tar', ['-xzOf', pkg.tarball, 'package/package.json'], { capture: true });
  const packed = JSON.parse(text);
  // What publishing must have rewritten: the workspace's source condition and workspace: ranges.
  for (const leftover of ['@cairn/source', 'workspace:', './src/']) {
    if (text.includes(leftover))
      fail(`${pkg.manifest.name}'s packed package.json still names "${leftover}"`);
  }
  if (packed.private === true) fail(`${pkg.manifest.name} is private`);
  for (const field of ['license', 'engines', 'exports', 'files']) {
    if (packed[field] === undefined)
      fail(`${pkg.manifest.name}'s packed package.json has no "${field}"`);
  }
  for (const target of [...Object.values(packed.bin ?? {}), ...targets(packed.exports)]) {
    if (!files.has(`package/${target.replace(/^\.\//, '')}`)) {
      fail(`${pkg.manifest.name} points at ${target}, which its tarball does not hold`);
    }
  }
  if (!files.has('package/README.md')) fail(`${pkg.manifest.name} packs no README.md`);
  if ([...files].some((file) => file.endsWith('.test.ts') || file.endsWith('.test.js'))) {
    fail(`${pkg.manifest.name} packs test files`);
  }
}

// 2. Lint the tarballs as published.
for (const pkg of packages) {
  step(`publint and attw: ${pkg.manifest.name}`);
  run(bin('publint'), ['run', pkg.tarball, '--strict']);
  // ESM only: the CommonJS (node10, node16-cjs) resolutions are not offered, so not checked.
  run(bin('attw'), [pkg.tarball, '--profile', 'esm-only', '--format', 'table-flipped']);
}

// 3. A fresh npm project with the tarballs, their peers, and what each README's install line names.
const readmes = packages.map((pkg) => ({ pkg, ...readReadme(pkg) }));
const installs = new Map();
for (const pkg of packages) {
  for (const [name, range] of Object.entries(pkg.manifest.peerDependencies ?? {})) {
    if (name.startsWith('@cairn/') || pkg.manifest.peerDependenciesMeta?.[name]?.optional) continue;
    if (!installs.has(name)) installs.set(name, `${name}@${range}`);
  }
}
for (const { names } of readmes) {
  for (const spec of names) {
    const name = spec.replace(/(?<=.)@.*$/, '');
    if (name.startsWith('@cairn/')) {
      if (!packages.some(({ manifest }) => manifest.name === name))
        fail(`a README installs ${name}, which is not published here`);
    } else if (!installs.has(name) || spec !== name) installs.set(name, spec);
  }
}
const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
installs.set('typescript', `typescript@${rootManifest.devDependencies.typescript}`);
installs.set('@types/node', `@types/node@${rootManifest.devDependencies['@types/node']}`);
// What the worker README has a .ts module started with on Node 22 before 22.18.
installs.set('tsx', `tsx@${rootManifest.devDependencies.tsx}`);

writeFileSync(
  join(project, 'package.json'),
  `${JSON.stringify({ name: 'cairn-pack-check', private: true, type: 'module' }, null, 2)}\n`,
);
step(`npm install ${packages.length} tarballs + ${[...installs.values()].join(' ')}`);
run(
  'npm',
  [
    'install',
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    ...packages.map(({ tarball }) => tarball),
    ...installs.values(),
  ],
  // Outside the workspace: no pnpm settings, no workspace root above it.
  { cwd: project, env: { npm_config_workspaces: 'false' } },
);

// 4. Type-check everything against the published types, then run it.
writeFileSync(
  join(project, 'tsconfig.json'),
  `${JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2022',
        lib: ['ES2022'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        verbatimModuleSyntax: true,
        skipLibCheck: false,
        outDir: 'out',
        rootDir: 'src',
      },
      include: ['src'],
    },
    null,
    2,
  )}\n`,
);
for (const file of readdirSync(fixtures).filter((name) => name.endsWith('.ts'))) {
  writeFileSync(join(project, 'src', file), readFileSync(join(fixtures, file)));
}
for (const { pkg, example } of readmes) {
  const name =
    runnableReadmes[pkg.dir] === 'vitest' ? `readme-${pkg.dir}.test.ts` : `readme-${pkg.dir}.ts`;
  writeFileSync(join(project, 'src', name), example);
}
step('tsc (NodeNext, strict, skipLibCheck false) against the published types');
typeCheck();

step('node out/smoke.js: every package imported, a short agent on the memory store');
run('node', ['out/smoke.js'], { cwd: project });

for (const [dir, runner] of Object.entries(runnableReadmes)) {
  if (!packages.some((pkg) => pkg.dir === dir)) continue;
  step(`README example of ${dir} (${runner})`);
  if (runner === 'node') run('node', [`out/readme-${dir}.js`], { cwd: project });
  else
    run(join(project, 'node_modules', '.bin', 'vitest'), ['run', `out/readme-${dir}.test.js`], {
      cwd: project,
    });
}

step('npx cairn-worker --help');
const help = run('npx', ['--no', '--', 'cairn-worker', '--help'], { cwd: project, capture: true });
if (!help.startsWith('Usage: cairn-worker')) fail(`cairn-worker --help printed:\n${help}`);
await checkWorkerBin({ project, step }).catch((error) => fail(error.message));

console.log(`\n✓ pack-check passed in ${((Date.now() - started) / 1000).toFixed(1)}s`);

/** Every file path an exports map names. */
function targets(exports) {
  if (typeof exports === 'string') return [exports];
  if (exports === null || typeof exports !== 'object') return [];
  return Object.values(exports).flatMap(targets);
}

/** The install line (the README's first code block) and the example (its first TypeScript block). */
function readReadme(pkg) {
  const listing = run('tar', ['-xzOf', pkg.tarball, 'package/README.md'], { capture: true });
  const blocks = [...listing.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map(([, lang, body]) => ({
    lang,
    body,
  }));
  const install = blocks[0];
  const command = install?.body.trim().match(/^(?:npm install|npm i|pnpm add|yarn add)\s+(.+)$/);
  if (
    install === undefined ||
    !['sh', 'bash', 'shell'].includes(install.lang) ||
    command === null
  ) {
    fail(
      `${pkg.manifest.name}'s README does not start with an install line (npm install / pnpm add ...)`,
    );
  }
  const names = command[1].split(/\s+/).filter((word) => !word.startsWith('-'));
  if (!names.some((spec) => spec.replace(/(?<=.)@.*$/, '') === pkg.manifest.name)) {
    fail(`${pkg.manifest.name}'s README install line does not install ${pkg.manifest.name}`);
  }
  const example = blocks.find(({ lang }) => lang === 'ts' || lang === 'typescript');
  if (example === undefined) fail(`${pkg.manifest.name}'s README has no TypeScript example`);
  return { names, example: example.body };
}

/**
 * Every error in this project's sources or in the @cairn/* declarations fails; errors inside other
 * libraries' own declarations (a DOM type the AI SDK names, an untyped import of theirs) are theirs, and
 * a user's skipLibCheck hides them.
 */
function typeCheck() {
  const result = spawnSync(
    join(project, 'node_modules', '.bin', 'tsc'),
    ['-p', '.', '--pretty', 'false'],
    {
      cwd: project,
      encoding: 'utf8',
    },
  );
  const errors = `${result.stdout}${result.stderr}`
    .split('\n')
    .filter((line) => /error TS\d+/.test(line));
  const ours = errors.filter(
    (line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/@cairn/'),
  );
  const theirs = errors.length - ours.length;
  if (theirs > 0) console.log(`(${theirs} errors inside third-party declarations ignored)`);
  if (ours.length > 0 || (result.status !== 0 && errors.length === 0)) {
    console.error(ours.join('\n') || `${result.stdout}${result.stderr}`);
    fail(`the published types do not check (${ours.length} errors)`);
  }
  // tsc still emits when only third-party declarations fail (noEmitOnError is off).
}
