import {
  CairnError,
  type DurableStore,
  type Fence,
  type JournalEntry,
  type RunStatus,
} from '@cairn/sdk';
import type { FakeClock } from '../fake-clock.js';
import type { Ledger } from './ledger.js';
import { ProcessClock } from './process-clock.js';
import type { Random } from './random.js';
import type { Scheduler } from './scheduler.js';

/** What a dead process's store calls fail with: nothing it does reaches the store any more. */
export class ProcessDied extends Error {
  constructor(process: string) {
    super(`process ${process} died`);
    this.name = 'ProcessDied';
  }
}

/** What one simulated process's attempt at a run ended with, for the schedule's log. */
export interface AttemptEnd {
  runId: string;
  outcome: string;
}

/**
 * One simulated worker process: its own store instance (its own sessions, on a real server), its own view of
 * the clock, the attempts it runs. It can be frozen (nothing it does proceeds: timers, store calls), thawed,
 * killed (nothing it does reaches the store again), cut off from the store for a while (every call fails with a
 * retryable STORE_UNAVAILABLE, as during a failover, while its timers and effects go on), or told to hand its runs
 * over.
 */
export class SimProcess {
  readonly clock: ProcessClock;
  readonly handOver = new AbortController();
  readonly attempts = new Map<string, Promise<void>>();
  state: 'alive' | 'frozen' | 'dead' = 'alive';
  handingOver = false;
  /** Cut off from the store: its calls fail before they reach it. */
  partitioned = false;
  /**
   * Was cut off at some time: a lease it could not give back then may outlive its attempt, running out only
   * with time (which a real store's clock, not the schedule's, measures).
   */
  wasCutOff = false;
  /**
   * Writes still to refuse, each with a retryable STORE_UNAVAILABLE, before any reaches the store: an outage
   * that the process's reads (claims, loads, heartbeats) get through, as a failover's read-only moment does.
   */
  failingWrites = 0;
  /** Told the run id of each write the outage refused: what the run then lost may be reported unknown. */
  onWriteRefused: (runId: string) => void = () => undefined;
  /** The store as this process uses it: calls held while frozen, refused once dead, writes seen by the ledger. */
  readonly store: DurableStore;
  private thawed: Array<() => void> = [];

  constructor(
    readonly name: string,
    readonly owner: string,
    readonly inner: DurableStore,
    clock: FakeClock,
    private readonly ledger: Ledger,
    private readonly scheduler: Scheduler,
    /** Chance that a write waits for the schedule to let it reach the store. */
    private readonly holdWrites: number,
    private readonly random: Random,
  ) {
    this.clock = new ProcessClock(clock);
    this.store = this.wrap();
  }

  get dead(): boolean {
    return this.state === 'dead';
  }

  /** Alive, and its calls reach the store. */
  get reachable(): boolean {
    return this.state === 'alive' && !this.partitioned;
  }

  /** May hold leases no attempt of it will renew or give back: frozen, dead, or cut off now or before. */
  get mayHoldStaleLeases(): boolean {
    return !this.reachable || this.wasCutOff;
  }

  /** Can start new attempts: alive and not handing over. */
  get available(): boolean {
    return this.state === 'alive' && !this.handingOver;
  }

  freeze(): void {
    if (this.state !== 'alive') return;
    this.state = 'frozen';
    this.clock.freeze();
  }

  thaw(): void {
    if (this.state !== 'frozen') return;
    this.state = 'alive';
    this.clock.thaw();
    for (const go of this.thawed.splice(0)) go();
  }

  kill(): void {
    this.state = 'dead';
    this.clock.kill();
    this.thawed = [];
  }

  private async gate(): Promise<void> {
    if (this.state === 'dead') throw new ProcessDied(this.name);
    if (this.state === 'frozen') await new Promise<void>((resolve) => this.thawed.push(resolve));
    // It may have died while it was frozen.
    if (this.dead) throw new ProcessDied(this.name);
    if (this.partitioned) {
      throw new CairnError('STORE_UNAVAILABLE', `process ${this.name} cannot reach the store`, {
        retryable: true,
      });
    }
  }

  private wrap(): DurableStore {
    const inner = this.inner;
    const ledger = this.ledger;
    const call = <T>(run: () => Promise<T>): Promise<T> =>
      this.scheduler.track(
        (async () => {
          await this.gate();
          return run();
        })(),
      );
    const write = <T>(
      kind: 'save' | 'append' | 'updateStatus',
      fence: Fence,
      payload: { status?: RunStatus; entries?: readonly JournalEntry[] },
      send: () => Promise<T>,
    ): Promise<T> =>
      (async () => {
        await this.gate();
        if (this.failingWrites > 0) {
          this.failingWrites -= 1;
          this.onWriteRefused(fence.runId);
          throw new CairnError('STORE_UNAVAILABLE', `the store refused ${kind} ${fence.runId}`, {
            retryable: true,
          });
        }
        if (this.random.chance(this.holdWrites)) {
          // The write is on its way: the schedule decides when it reaches the store.
          const { released } = this.scheduler.hold('write', this.name, `${kind} ${fence.runId}`);
          await released;
        }
        return this.scheduler.track(
          (async () => {
            await this.gate();
            const sent = ledger.sending(fence);
            const answer = await send();
            // A checkpoint the store refused for unread mail wrote nothing.
            const refused = kind === 'save' && (answer as { written?: boolean }).written === false;
            if (!refused) ledger.accepted(kind, fence, sent, payload);
            return answer;
          })(),
        );
      })();
    return {
      create: (run) =>
        call(async () => {
          const result = await inner.create(run);
          if (result.created) ledger.created(result.run);
          return result;
        }),
      load: (runId) => call(() => inner.load(runId)),
      list: (filter) => call(() => inner.list(filter)),
      delete: (runId) =>
        call(async () => {
          const deleted = await inner.delete(runId);
          if (deleted) ledger.deleted(runId);
          return deleted;
        }),
      requestCancel: (runId) => call(() => inner.requestCancel(runId)),
      prune: (options) => call(() => inner.prune(options)),
      claimable: (options) => call(() => inner.claimable(options)),
      nextWake: (definitions) => call(() => inner.nextWake(definitions)),
      signal: (runId, signal) => call(() => inner.signal(runId, signal)),
      mailbox: (runId) => call(() => inner.mailbox(runId)),
      acquire: (runId, options) =>
        call(async () => {
          const lease = await inner.acquire(runId, options);
          if (lease !== undefined) ledger.claimed('acquire', lease, this.name);
          return lease;
        }),
      adopt: (childRunId, parent) =>
        call(async () => {
          const lease = await inner.adopt(childRunId, parent);
          if (lease !== undefined) ledger.claimed('adopt', lease, this.name);
          return lease;
        }),
      renew: (lease, ttlMs) => call(() => inner.renew(lease, ttlMs)),
      release: (lease) => call(() => inner.release(lease)),
      // A write leaves the process when it is sent: what it carries is copied then, as a real store's
      // driver serializes it, and a write held on its way carries that copy.
      save: (fence, checkpoint) => {
        const sent = structuredClone({ fence, checkpoint });
        return write('save', sent.fence, { status: checkpoint.status }, () =>
          inner.save(sent.fence, sent.checkpoint),
        );
      },
      append: (fence, entries) => {
        const sent = structuredClone({ fence, entries });
        return write('append', sent.fence, { entries: sent.entries }, () =>
          inner.append(sent.fence, sent.entries),
        );
      },
      updateStatus: (fence, update) => {
        const sent = structuredClone({ fence, update });
        return write('updateStatus', sent.fence, { status: update.status }, () =>
          inner.updateStatus(sent.fence, sent.update),
        );
      },
    };
  }
}
