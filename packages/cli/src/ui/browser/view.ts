/**
 * What the page shows now: a view lives from one navigation to the next. Answers and events that arrive after the
 * user left a view are dropped (`alive`), and what it started (timers, EventSources, listeners) is stopped by the
 * cleanups the next navigation runs.
 */
export interface View {
  /** False once the page has navigated away from this view. */
  readonly alive: boolean;
  /** Runs `cleanup` when the page leaves this view. */
  onCleanup(cleanup: () => void): void;
}

/** A view, and how to end it. */
export interface OpenView extends View {
  /** Runs the view's cleanups and makes it not `alive`. */
  close(): void;
}

/** A new view. */
export function openView(): OpenView {
  let alive = true;
  const cleanups: (() => void)[] = [];
  return {
    get alive() {
      return alive;
    },
    onCleanup: (cleanup) => void cleanups.push(cleanup),
    close: () => {
      alive = false;
      for (const cleanup of cleanups.splice(0)) cleanup();
    },
  };
}
