/** Something the schedule holds until it decides to let it go: an effect's outcome, or a write on its way. */
export interface Held {
  id: number;
  kind: 'effect' | 'write';
  /** The simulated process it belongs to. */
  process: string;
  /** What it is, for the schedule's log: `tool pay r1@1/p1`, `append r1`. */
  label: string;
  release(): void;
}

/**
 * Holds what the schedule controls (effects settling, writes reaching the store) and tracks what it does not
 * (store calls in progress on a real server), so each step of a schedule runs until the system is quiet:
 * everything either done or held. What is held is let go one decision at a time, from the seed.
 */
export class Scheduler {
  private nextId = 0;
  private readonly held = new Map<number, Held>();
  private readonly inFlight = new Set<Promise<unknown>>();

  /** Holds something until `release`; returns the promise that resolves then. */
  hold(
    kind: Held['kind'],
    process: string,
    label: string,
  ): { id: number; released: Promise<void> } {
    const id = (this.nextId += 1);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.held.set(id, {
      id,
      kind,
      process,
      label,
      release: () => {
        this.held.delete(id);
        release();
      },
    });
    return { id, released };
  }

  /** Forgets a held thing without releasing it (an effect aborted by its run). */
  drop(id: number): void {
    this.held.delete(id);
  }

  /** What is held now, in the order it was held: the same seed sees the same list. */
  pending(filter?: (held: Held) => boolean): Held[] {
    const all = [...this.held.values()].sort((a, b) => a.id - b.id);
    return filter === undefined ? all : all.filter(filter);
  }

  /** Tracks a call on a real server until it settles. */
  track<T>(promise: Promise<T>): Promise<T> {
    const tracked = promise.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
    tracked.catch(() => undefined);
    return tracked;
  }

  /** Resolves once nothing is in progress but what is held: callbacks run, server calls answered. */
  async quiet(): Promise<void> {
    for (let calm = 0; calm < 4;) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.inFlight.size > 0) {
        calm = 0;
        await Promise.race([...this.inFlight]).catch(() => undefined);
        continue;
      }
      calm += 1;
    }
  }
}
