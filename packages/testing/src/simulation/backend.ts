import { memoryStore, type DurableStore } from '@cairn/sdk';
import type { FakeClock } from '../fake-clock.js';

/**
 * A store under simulation: how schedules open an isolated space on it, connect processes, and do to it what
 * only the outside world can (let a lease run out on the store's own clock, end a process's sessions).
 */
export interface SimulationBackend {
  readonly name: string;
  /** A fresh, isolated space (a schema, a key prefix) for one schedule, on the schedule's clock. */
  open(clock: FakeClock): Promise<SimulationSpace>;
}

/** One schedule's space on a store. */
export interface SimulationSpace {
  /** A store instance for a new process: its own connections and sessions, where the store has them. */
  connect(process: string): Promise<DurableStore>;
  /**
   * Makes the leases these owners hold run out now on the store's clock. Called after the schedule's clock moved
   * past the lease: a store that reads that clock (memory) needs nothing more.
   */
  expireLeases(owners: readonly string[]): Promise<void>;
  /** Ends a store instance's sessions as the death of its process would (Postgres: its lock connection). */
  disconnect(store: DurableStore): Promise<void>;
  /** Drops the lock session of one store instance while its process lives on (Postgres only). */
  loseLockSession?(store: DurableStore, process: string): Promise<void>;
  /**
   * What the store keeps besides the runs that is wrong once the schedule drained (an index entry a run lacks
   * or does not own), each a violation the schedule reports. @defaultValue none checked
   */
  check?(): Promise<string[]>;
  close(): Promise<void>;
}

/** The memory store under simulation: one instance every process shares, on the schedule's clock. */
export function memorySimulation(): SimulationBackend {
  return {
    name: 'memory',
    async open(clock) {
      const store = memoryStore({ clock });
      return {
        connect: async () => store,
        expireLeases: async () => undefined,
        disconnect: async () => undefined,
        close: async () => undefined,
      };
    },
  };
}
