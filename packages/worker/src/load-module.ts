/**
 * Loading the user module a command names (`cairn-worker <module>`, `cairn --module <path>`): an ES module that
 * exports a store, the definitions it runs and an optional `close`.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CairnError, isCairnError, type DurableStore } from '@cairn/sdk';
import type { Runnable } from './definitions.js';

/** What a user module provides. */
export interface WorkerModule {
  store: DurableStore;
  agents: Runnable[];
  planners: Runnable[];
  definitions: Runnable[];
  /** The module's own clean-up (its pools), called before the store's `close()`. */
  close?: () => unknown;
}

/** Options of `loadWorkerModule`. */
export interface LoadModuleOptions {
  /** Refuse a module that exports no agent, planner or definition (a worker has nothing to run). @defaultValue true */
  requireDefinitions?: boolean;
}

/** A module that cannot be used: `data.reason` is `missing` (no file at the path) or `exports`. */
function moduleError(path: string, reason: 'missing' | 'exports', message: string): CairnError {
  return new CairnError('INVALID_ARGUMENT', message, { data: { module: path, reason } });
}

/**
 * Imports the module at `path` and checks what it exports, as named exports or as properties of its default
 * export (which may also be a function returning them, sync or async). Throws `INVALID_ARGUMENT` with
 * `data.reason` `missing` when no file is there, `exports` when it lacks a store (or definitions, when
 * required); an error the module throws while loading goes through as it is.
 */
export async function loadWorkerModule(
  path: string,
  options: LoadModuleOptions = {},
): Promise<WorkerModule> {
  const file = resolve(path);
  if (!existsSync(file)) throw moduleError(path, 'missing', `No module at ${file}.`);
  const imported = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  let source: unknown = imported.default ?? imported;
  if (typeof source === 'function') source = await (source as () => unknown)();
  if (typeof source !== 'object' || source === null) {
    throw moduleError(path, 'exports', `${path} exports no object of { store, agents, planners }.`);
  }
  // Named exports next to a default export object: the default's properties win.
  const exports = { ...imported, ...(source as Record<string, unknown>) };
  const store = exports.store as Partial<DurableStore> | undefined;
  if (
    typeof store !== 'object' ||
    store === null ||
    typeof store.claimable !== 'function' ||
    typeof store.acquire !== 'function'
  ) {
    throw moduleError(
      path,
      'exports',
      `${path} exports no store (a DurableStore such as pgStore(...) or memoryStore()).`,
    );
  }
  const runnables = (key: 'agents' | 'planners' | 'definitions'): Runnable[] => {
    const value = exports[key];
    if (value === undefined) return [];
    const list = Array.isArray(value)
      ? (value as unknown[])
      : typeof value === 'object' && value !== null
        ? Object.values(value)
        : [value];
    for (const item of list) {
      const runnable = item as Partial<Runnable> | null;
      if (
        typeof runnable?.kind !== 'string' ||
        typeof runnable.name !== 'string' ||
        typeof runnable.definition !== 'object'
      ) {
        throw moduleError(
          path,
          'exports',
          `${path}: "${key}" holds something that is not an agent or a planner.`,
        );
      }
    }
    return list as Runnable[];
  };
  const loaded: WorkerModule = {
    store: store as DurableStore,
    agents: runnables('agents'),
    planners: runnables('planners'),
    definitions: runnables('definitions'),
  };
  const count = loaded.agents.length + loaded.planners.length + loaded.definitions.length;
  if (count === 0 && options.requireDefinitions !== false) {
    throw moduleError(
      path,
      'exports',
      `${path} exports no agents, planners or definitions for the worker to run.`,
    );
  }
  if (typeof exports.close === 'function') loaded.close = exports.close as () => unknown;
  return loaded;
}

/** Whether `error` is `loadWorkerModule`'s refusal of a path with no file: a usage error for a command. */
export function isModuleMissing(error: unknown): boolean {
  return isCairnError(error) && error.data.reason === 'missing';
}
