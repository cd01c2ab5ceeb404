import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Prefix of the temporary directory that holds the other ref's worktree. */
export const checkoutDirPrefix = 'cairn-bench-compare-';

/** What a command printed and how it ended. */
interface Outcome {
  code: number | null;
  output: string;
}

/** Runs a command to its end, keeping what it printed (both streams, interleaved). */
export function runCommand(
  command: string,
  args: readonly string[],
  cwd: string,
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

async function git(repo: string, args: readonly string[]): Promise<string> {
  const { code, output } = await runCommand('git', args, repo);
  if (code !== 0) throw new Error(`git ${args.join(' ')} failed:\n${output.trim()}`);
  return output.trim();
}

/** pnpm's error code in what it printed (`ERR_PNPM_OUTDATED_LOCKFILE`), else its last line. */
function pnpmError(output: string): string {
  return /ERR_PNPM_\w+/.exec(output)?.[0] ?? output.trim().split('\n').at(-1)?.trim() ?? '';
}

/** A commit of this repository by any name git accepts (`main`, `HEAD~1`, a hash): its full and short hash. */
export async function describeCommit(
  repo: string,
  ref: string,
): Promise<{ commit: string; short: string }> {
  const commit = await git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]).catch(
    () => {
      throw new Error(`--compare ${ref}: not a commit of this repository`);
    },
  );
  return { commit, short: commit.slice(0, 9) };
}

/** True when the work tree of `repo` differs from its HEAD (tracked or untracked files). */
export async function hasChanges(repo: string): Promise<boolean> {
  return (await git(repo, ['status', '--porcelain'])) !== '';
}

/** Another commit checked out beside this one, with its dependencies installed. */
export interface OtherCheckout {
  root: string;
  /** An empty directory beside the worktree, for the reports; removed with it. */
  scratch: string;
  /** Removes the worktree and its directory; safe to call twice. */
  remove(): Promise<void>;
}

/**
 * Checks `commit` out in a temporary detached worktree of `repo` and installs its dependencies from pnpm's
 * store: offline and frozen first (the store already holds this checkout's packages, so an unchanged lockfile
 * needs no network; pnpm links the files from its store, which takes about a second), then, when the other
 * lockfile wants packages the store lacks or does not match its package.json, an install that may fetch and
 * resolve. The worktree is removed on failure.
 */
export async function checkOut(options: {
  repo: string;
  commit: string;
  log(message: string): void;
}): Promise<OtherCheckout> {
  const dir = await mkdtemp(join(tmpdir(), checkoutDirPrefix));
  const root = join(dir, 'checkout');
  const scratch = join(dir, 'reports');
  let removed = false;
  const remove = async () => {
    if (removed) return;
    removed = true;
    const removal = await runCommand('git', ['worktree', 'remove', '--force', root], options.repo);
    await rm(dir, { recursive: true, force: true });
    // When git could not remove it (a file held open, say), the directory is gone by now and prune forgets it
    // (prune only forgets worktrees whose directories are gone).
    if (removal.code !== 0) await runCommand('git', ['worktree', 'prune'], options.repo);
  };
  try {
    await git(options.repo, ['worktree', 'add', '--detach', root, options.commit]);
    if (!existsSync(join(root, 'bench', 'src', 'main.ts')))
      throw new Error(`${options.commit} has no bench/src/main.ts to compare with`);
    options.log(`compare: installing the dependencies of ${options.commit.slice(0, 9)} in ${root}`);
    const offline = await runCommand(
      'pnpm',
      ['install', '--frozen-lockfile', '--offline', '--reporter=append-only'],
      root,
    );
    if (offline.code !== 0) {
      options.log(
        `compare: pnpm install --frozen-lockfile --offline failed (${pnpmError(offline.output)}); installing as pnpm resolves it`,
      );
      // Old commits exist whose lockfile does not match their package.json: the worktree's lockfile may change.
      const online = await runCommand(
        'pnpm',
        ['install', '--no-frozen-lockfile', '--prefer-offline', '--reporter=append-only'],
        root,
      );
      if (online.code !== 0) throw new Error(`pnpm install failed:\n${online.output.trim()}`);
    }
    await mkdir(scratch);
    return { root, scratch, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}
