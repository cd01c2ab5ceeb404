import {
  cairnTracer,
  initialRunSnapshot,
  isCairnError,
  runDurable,
  type DurableDefinition,
} from '@cairn/sdk';
import { SimulatedCrash } from '../crash-harness.js';
import type { FakeClock } from '../fake-clock.js';
import type { SimulationSpace } from './backend.js';
import type { RunFate } from './invariants.js';
import { Ledger } from './ledger.js';
import { MailboxLedger } from './mailbox-ledger.js';
import { seededRandom, type Random } from './random.js';
import { Scheduler } from './scheduler.js';
import { SimProcess } from './sim-process.js';
import { nonIdempotentCalls, rootIdOf, SimWorld, type SimKind } from './sim-world.js';
import { WriteDiscipline } from './write-discipline.js';

/** Where every schedule's clock starts: log lines show the time since. */
export const startTime = Date.UTC(2026, 0, 1);

/** One schedule: the state a seed's decisions act on. */
export class Schedule {
  readonly log: string[] = [];
  readonly scheduler = new Scheduler();
  readonly ledger = new Ledger((line) => this.log.push(line));
  /** Every signal the store accepted, with what the client saw before it sent it. */
  readonly mailboxes = new MailboxLedger((text) => this.ledger.violation(text));
  /** Signals composed so far: each gets a number its reason or text names. */
  sent = 0;
  /** The runs a client saw waiting when it last looked: where signals and outages are aimed. */
  readonly seenWaiting = new Set<string>();
  readonly world: SimWorld;
  readonly processes: SimProcess[] = [];
  readonly fates = new Map<string, RunFate>();
  client!: SimProcess;
  private spawned = 0;
  private readonly crashArmed = new Set<SimProcess>();
  /** What attempts threw that only a defect throws, reported once per run. */
  private readonly thrown = new Set<string>();
  private readonly definitions = new Map<SimProcess, ReturnType<SimWorld['definitions']>>();

  constructor(
    readonly seed: number,
    readonly random: Random,
    private readonly holds: Random,
    readonly clock: FakeClock,
    readonly space: SimulationSpace,
    readonly leaseMs: number,
  ) {
    this.world = new SimWorld(this.scheduler, seededRandom(seed ^ 0x27d4eb2f));
  }

  note(line: string): void {
    this.log.push(`[${this.clock.now() - startTime}] ${line}`);
  }

  async spawn(name = `p${(this.spawned += 1)}`, holdWrites = 0.3): Promise<SimProcess> {
    const inner = await this.space.connect(name);
    const process = new SimProcess(
      name,
      `owner-${name}`,
      inner,
      this.clock,
      this.ledger,
      this.scheduler,
      holdWrites,
      this.holds,
    );
    process.onWriteRefused = (runId) => {
      const fate = this.fates.get(rootIdOf(runId));
      if (fate !== undefined) fate.disrupted = true;
    };
    if (name !== 'client') this.processes.push(process);
    this.note(`spawn ${name}`);
    return process;
  }

  async createRun(runId: string, kind: SimKind): Promise<void> {
    const definition = this.definition(this.client, kind);
    const input = this.world.inputOf(kind, runId);
    const { created } = await this.client.store.create({
      runId,
      kind: definition.kind,
      name: definition.name,
      signature: definition.signature,
      status: 'queued',
      snapshot: initialRunSnapshot(definition, input, runId),
    });
    this.note(`start ${kind} ${runId}: ${created ? 'created' : 'exists'}`);
  }

  /** A root run's definition, bound to the process that performs it. */
  definition(process: SimProcess, kind: SimKind): DurableDefinition<unknown, string, unknown> {
    let defs = this.definitions.get(process);
    if (defs === undefined) this.definitions.set(process, (defs = this.world.definitions(process)));
    return defs[kind].definition as DurableDefinition<unknown, string, unknown>;
  }

  /** Starts an attempt of `process` at a root run, the way a worker performs a claimable run. */
  attempt(process: SimProcess, runId: string, onBoundary?: () => void): Promise<string> {
    const definition = this.definition(process, this.fates.get(runId)!.kind);
    const discipline = new WriteDiscipline(
      (effectId) => nonIdempotentCalls.has(effectId.slice(effectId.lastIndexOf('/') + 1)),
      (text) => this.ledger.violation(`${process.name}: ${text}`),
    );
    const attempt = runDurable(definition, {
      store: process.store,
      runId,
      mode: 'resume',
      force: false,
      clock: process.clock,
      owner: process.owner,
      leaseMs: this.leaseMs,
      storeRetry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 400, maxElapsedMs: 30_000 },
      deleteOnComplete: false,
      tracer: cairnTracer(undefined),
      handOverSignal: process.handOver.signal,
      onBoundary: (boundary) => {
        onBoundary?.();
        discipline.pass(boundary);
        if (this.crashArmed.has(process)) {
          this.crashArmed.delete(process);
          this.kill(process, `at ${boundary.point} ${boundary.effectId ?? ''}`);
        }
        if (process.dead) throw new SimulatedCrash(boundary);
      },
    }).then(
      () => 'completed',
      (error: unknown) => (isCairnError(error) ? error.code : String(error)),
    );
    const done = attempt.then((outcome) => {
      process.attempts.delete(runId);
      this.note(`${process.name} ${runId}: ${outcome}`);
      // A suspended attempt may have left settled results unwritten: the next holder reports them unknown.
      if (outcome === 'RUN_SUSPENDED') this.fates.get(runId)!.disrupted = true;
      // What only a defect throws: the runtime's own errors are typed.
      const thrown = `${runId} ${outcome}`;
      if (
        /^(TypeError|RangeError|ReferenceError|SyntaxError)\b/.test(outcome) &&
        !this.thrown.has(thrown)
      ) {
        this.thrown.add(thrown);
        this.ledger.violation(`${process.name}'s attempt at ${runId} threw ${outcome}`);
      }
    });
    process.attempts.set(runId, done);
    this.note(`${process.name} claims ${runId}`);
    return attempt;
  }

  /** The runs a process holds now lose it: whatever was in flight may be reported unknown. */
  disrupt(process: SimProcess): void {
    for (const runId of process.attempts.keys()) this.fates.get(runId)!.disrupted = true;
  }

  kill(process: SimProcess, where: string): void {
    if (process.dead) return;
    this.disrupt(process);
    process.kill();
    this.note(`crash ${process.name} ${where}`);
    void this.space.disconnect(process.inner).catch(() => undefined);
  }

  armCrash(process: SimProcess): void {
    if (process.attempts.size === 0) this.kill(process, 'while idle');
    else this.crashArmed.add(process);
  }

  /** Moves the shared clock in small steps, letting heartbeats and what they wake run between them. */
  async advance(ms: number): Promise<void> {
    // Time passing while a holder is frozen, dead or cut off may let its leases run out on the store's clock.
    for (const process of this.processes) if (process.mayHoldStaleLeases) this.disrupt(process);
    const step = Math.max(1, Math.floor(this.leaseMs / 6));
    for (let moved = 0; moved < ms; moved += step) {
      await this.clock.advance(Math.min(step, ms - moved));
      await this.scheduler.quiet();
    }
  }

  /** Lets every lease of frozen, dead and cut-off processes run out on the store's clock. */
  async expire(): Promise<void> {
    const stopped = this.processes.filter((p) => p.mayHoldStaleLeases);
    for (const process of stopped) this.disrupt(process);
    await this.advance(this.leaseMs + 1);
    await this.space.expireLeases(stopped.map((p) => p.owner));
    this.note(`leases of ${stopped.map((p) => p.name).join(', ') || 'nobody'} ran out`);
  }

  releasable(includeDead: boolean) {
    const state = new Map(this.processes.map((p) => [p.name, p.state]));
    return this.scheduler.pending(
      (held) =>
        state.get(held.process) === 'alive' ||
        held.process === 'client' ||
        (includeDead && state.get(held.process) === 'dead'),
    );
  }
}
