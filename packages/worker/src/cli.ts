#!/usr/bin/env node
/**
 * `cairn-worker <module>`: the long-lived worker process of a deployment. It imports a module that exports
 * a store and definitions, runs `createWorker` on them until SIGTERM or SIGINT, hands its runs over, calls
 * the module's `close()` and exits 0.
 */
import { readFileSync } from 'node:fs';
import { isCairnError, type DurableStore } from '@cairn/sdk';
import { parseCli, usage, UsageError, type LogFormat } from './cli-options.js';
import type { WorkerEvent } from './events.js';
import { isModuleMissing, loadWorkerModule, type WorkerModule } from './load-module.js';
import { startedByPackageManager, watchParent } from './parent-exit.js';
import { createWorker } from './worker.js';

function logger(format: LogFormat): (event: WorkerEvent) => void {
  if (format === 'silent') return () => undefined;
  return (event) => {
    const time = new Date().toISOString();
    if (format === 'json') {
      process.stdout.write(`${JSON.stringify({ time, ...event })}\n`);
      return;
    }
    const { type, ...fields } = event;
    const rest = Object.entries(fields)
      .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
      .join(' ');
    process.stdout.write(`${time} ${type}${rest === '' ? '' : ` ${rest}`}\n`);
  };
}

async function main(): Promise<void> {
  const parent = process.ppid;
  let options;
  try {
    options = parseCli(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`cairn-worker: ${error.message}\nSee cairn-worker --help.\n`);
    process.exitCode = 2;
    return;
  }
  if (options === 'help') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  if (options === 'version') {
    const manifest = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    process.stdout.write(`${manifest.version}\n`);
    return;
  }

  // A signal during start-up ends the process once the module is loaded, before anything is claimed.
  let stopRequested = false;
  const early = () => {
    if (stopRequested) process.exit(130);
    stopRequested = true;
  };
  process.on('SIGTERM', early).on('SIGINT', early);

  let loaded: WorkerModule;
  try {
    loaded = await loadWorkerModule(options.module);
  } catch (error) {
    process.stderr.write(`cairn-worker: ${describe(error)}\n`);
    process.exitCode = isModuleMissing(error) ? 2 : 1;
    process.off('SIGTERM', early).off('SIGINT', early);
    return;
  }
  // The module's close() ends what it opened; store.close() ends what the store opened itself (pgStore's
  // lock session and LISTEN connections, redisStore's subscribers), which would otherwise hold the process.
  const closeModule = async () => {
    await closing('close()', () => loaded.close?.());
    await closing('store.close()', () => (loaded.store as { close?: () => unknown }).close?.());
  };
  if (stopRequested) {
    await closeModule();
    return;
  }
  if (options.command === 'migrate') {
    await migrate(loaded.store);
    await closeModule();
    return;
  }

  // The process's signals are this command's: the first hands the runs over, a second exits at once.
  const log = logger(options.log);
  const worker = createWorker({
    ...options.worker,
    store: loaded.store,
    agents: loaded.agents,
    planners: loaded.planners,
    definitions: loaded.definitions,
    shutdownSignals: [],
    onEvent: (event) => {
      log(event);
      // A schema that is not migrated will not become so by waiting: exit 1 as --help says, with what to run.
      if (event.type === 'error' && event.code === 'SCHEMA_MISMATCH' && stopping === undefined) {
        process.stderr.write(
          `cairn-worker: ${event.code}: ${event.message}\nRun \`cairn-worker migrate ${options.module}\` first.\n`,
        );
        process.exitCode = 1;
        stop();
      }
    },
  });
  process.off('SIGTERM', early).off('SIGINT', early);
  // The worker's timers do not hold the process (a memory store holds no socket either): the command runs
  // until it is stopped.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  let stopping: Promise<void> | undefined;
  // npm's signal kills the shell npm ran this command through, not this process: npm's end stands for it.
  const unwatch = startedByPackageManager(process.env)
    ? watchParent(
        (pid) => {
          if (stopping !== undefined) return;
          process.stderr.write(
            `cairn-worker: the process that started it (pid ${pid}) exited; stopping as on SIGTERM.\n`,
          );
          stop();
        },
        { parent },
      )
    : () => undefined;
  const stop = (signal?: NodeJS.Signals) => {
    if (stopping !== undefined) process.exit(130);
    unwatch();
    log({ type: 'closing', ...(signal === undefined ? {} : { signal }) });
    stopping = (async () => {
      await worker.close();
      clearInterval(keepAlive);
      await closeModule();
      // Whatever the module left open (a pool it did not end) must not keep a stopped worker alive.
      setTimeout(() => {
        const open = process.getActiveResourcesInfo().join(', ');
        process.stderr.write(
          `cairn-worker: still open 2 s after close() (stdio included): ${open}; exiting.\n`,
        );
        process.exit();
      }, 2_000).unref();
    })();
  };
  process.on('SIGTERM', stop).on('SIGINT', stop);
  try {
    await worker.start();
  } catch (error) {
    process.stderr.write(`cairn-worker: the worker failed to start: ${describe(error)}\n`);
    // start() prepares the store: a schema that is not migrated is found there.
    if (isCairnError(error) && error.code === 'SCHEMA_MISMATCH') {
      process.stderr.write(`Run \`cairn-worker migrate ${options.module}\` first.\n`);
    }
    process.exitCode = 1;
    process.off('SIGTERM', stop).off('SIGINT', stop);
    unwatch();
    clearInterval(keepAlive);
    await worker.close();
    await closeModule();
  }
}

/** `cairn-worker migrate`: the store's migrations, or nothing for a store that has none. Exit 1 on failure. */
async function migrate(store: DurableStore): Promise<void> {
  const migrations = (store as { migrate?: () => Promise<unknown> }).migrate;
  try {
    if (typeof migrations !== 'function') {
      process.stdout.write('cairn-worker: this store has no migrations.\n');
      return;
    }
    await migrations.call(store);
    process.stdout.write('cairn-worker: the store is migrated.\n');
  } catch (error) {
    process.stderr.write(`cairn-worker: migrate failed: ${describe(error)}\n`);
    process.exitCode = 1;
  }
}

/** One step of shutting down: a failure is reported and makes the exit code 1, and the next step runs. */
async function closing(name: string, step: () => unknown): Promise<void> {
  try {
    await step();
  } catch (error) {
    process.stderr.write(`cairn-worker: ${name} failed: ${describe(error)}\n`);
    process.exitCode = 1;
  }
}

function describe(error: unknown): string {
  if (isCairnError(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

await main();
