/**
 * How `cairn-worker` notices that npm, which started it, is gone. `npx cairn-worker` and `npm run` run a bin
 * through `sh -c`, and npm forwards SIGTERM and SIGINT to that shell only. dash (/bin/sh on Debian, Ubuntu
 * and the node images) waits for the command instead of exec'ing it, so the signal kills the shell and the
 * worker, never signalled, is reparented to the init process (or to a subreaper).
 */
import { systemClock, type Clock } from '@cairn/sdk';

/**
 * Whether the process was started by npm (`npx`, `npm exec`, `npm run`; pnpm and yarn scripts too), whose
 * end should end it. Elsewhere a parent that exits may mean to leave the worker running
 * (`nohup cairn-worker … &`, a daemonizing init script), and under docker, Kubernetes or systemd the
 * worker's parent is init from the start.
 */
export function startedByPackageManager(env: NodeJS.ProcessEnv): boolean {
  return env.npm_lifecycle_event !== undefined && env.npm_lifecycle_event !== '';
}

/** Options of `watchParent`. */
export interface WatchParentOptions {
  /** The parent's pid when the process started. @defaultValue the parent's pid now */
  parent?: number;
  /** How often the parent pid is read. @defaultValue 500 */
  intervalMs?: number;
  /** @defaultValue systemClock, whose timers never keep the process alive */
  clock?: Clock;
  /** Reads the parent's pid. @defaultValue () => process.ppid */
  ppid?: () => number;
}

/**
 * Calls `onExit` once, with the parent's pid, when the process has been reparented: its parent pid is no
 * longer `parent`. Comparing with the first parent, not with 1, holds for a process whose parent was init
 * from the start and for one reparented to a subreaper. Returns a function that ends the watch.
 */
export function watchParent(
  onExit: (parent: number) => void,
  options: WatchParentOptions = {},
): () => void {
  const { intervalMs = 500, clock = systemClock, ppid = () => process.ppid } = options;
  const parent = options.parent ?? ppid();
  let timer = clock.setTimer(intervalMs, check);
  let watching = true;
  function check(): void {
    if (!watching) return;
    if (ppid() !== parent) {
      watching = false;
      onExit(parent);
      return;
    }
    timer = clock.setTimer(intervalMs, check);
  }
  return () => {
    watching = false;
    timer.cancel();
  };
}
