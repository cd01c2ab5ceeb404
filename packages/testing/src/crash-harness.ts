import { isDeepStrictEqual } from 'node:util';
import {
  memoryStore,
  RunWaitingError,
  type Boundary,
  type BoundaryHook,
  type Clock,
  type DurableStore,
  type ExecuteOptions,
  type ResumeOptions,
  type RunWait,
  type Usage,
} from '@cairn/sdk';
import { createFakeClock, type FakeClock } from './fake-clock.js';

/** Thrown at a boundary to simulate the process dying there. */
export class SimulatedCrash extends Error {
  readonly boundary: Boundary;
  constructor(boundary: Boundary) {
    super(
      `simulated crash at ${boundary.point} ${boundary.effectId ?? boundary.entries?.join(',') ?? ''}`,
    );
    this.name = 'SimulatedCrash';
    this.boundary = boundary;
  }
}

/** Anything with `execute` and `resume`: an agent, a planner. */
export interface Resumable<Input, Result> {
  execute(input: Input, options?: ExecuteOptions): Promise<Result>;
  resume(runId: string, options?: ResumeOptions): Promise<Result>;
}

/** What the harness compares between an uninterrupted run and a crashed-and-resumed one. */
export interface Observation {
  output: unknown;
  usage: Usage;
  /** Keys (tool call ids) of the calls the run reported as outcome unknown. */
  unknown: string[];
}

/** One fresh world: the definition, built on the store it is handed, and the external effects it had. */
export interface ScenarioWorld<Input, Result> {
  create(store: DurableStore, clock: Clock): Resumable<Input, Result>;
  /** How often each side effect happened, keyed by tool call id (shared by every `create`). */
  sideEffects(): Readonly<Record<string, number>>;
  /** How often the model was called, when the scenario counts it. */
  modelCalls?(): number;
}

/** A scenario to crash at every boundary. */
export interface CrashScenario<Input, Result> {
  input: Input;
  /** Builds a fresh world; called once for the uninterrupted run and once per boundary. */
  setup(): ScenarioWorld<Input, Result>;
  /** Reads output, usage and outcome-unknown reports from a result. */
  observe(result: Result): Observation;
  /** Tool call ids whose tools are idempotent: they may run again instead of being reported unknown. */
  idempotent?(key: string): boolean;
  /** Maps an effect id to the key side effects use. @defaultValue the part after the last `/` */
  keyOf?(effectId: string): string;
  /** A store for each case. @defaultValue a memory store on the fake clock */
  store?(clock: FakeClock): DurableStore | Promise<DurableStore>;
  /** The lease length the scenario's definitions use; time is moved past it after a crash. @defaultValue 30000 */
  leaseMs?: number;
  /**
   * What the world does each time the run ends an attempt waiting (a person approving, a webhook arriving,
   * time passing); the run is then resumed. Called again if a crashed run reaches the same wait again, so it
   * should send with idempotency keys. Without it, a run that waits is a violation.
   */
  onWaiting?(world: {
    store: DurableStore;
    clock: FakeClock;
    runId: string;
    wait: RunWait;
  }): Promise<void>;
}

/** What happened at one boundary. */
export interface CrashCase {
  index: number;
  boundary: Boundary;
  /** Calls reported as outcome unknown after the resume. */
  unknown: string[];
  violations: string[];
}

/** The outcome of exploring every boundary. */
export interface CrashReport {
  /** What the uninterrupted run gave, which every crashed case must give too. */
  baseline: Observation;
  /** The side effects of the uninterrupted run, by key. */
  baselineSideEffects: Readonly<Record<string, number>>;
  /** How many boundaries the uninterrupted run passed, each one crashed at once. */
  boundaries: number;
  byPoint: Record<string, number>;
  cases: CrashCase[];
  violations: string[];
}

const runId = 'crash-harness-run';

/** Wraps a store so the harness can see which writes an attempt makes after it crashed. */
function watchWrites(
  store: DurableStore,
  crashed: () => boolean,
  onLateWrite: (what: string) => void,
): DurableStore {
  const guard =
    <Args extends unknown[], R>(name: string, write: (...args: Args) => Promise<R>) =>
    (...args: Args): Promise<R> => {
      if (crashed()) onLateWrite(name);
      return write(...args);
    };
  return {
    create: guard('create', store.create.bind(store)),
    load: store.load.bind(store),
    save: guard('save', store.save.bind(store)),
    append: guard('append', store.append.bind(store)),
    updateStatus: guard('updateStatus', store.updateStatus.bind(store)),
    list: store.list.bind(store),
    delete: guard('delete', store.delete.bind(store)),
    prune: guard('prune', store.prune.bind(store)),
    acquire: guard('acquire', store.acquire.bind(store)),
    renew: guard('renew', store.renew.bind(store)),
    release: guard('release', store.release.bind(store)),
    adopt: guard('adopt', store.adopt.bind(store)),
    requestCancel: guard('requestCancel', store.requestCancel.bind(store)),
    claimable: store.claimable.bind(store),
    nextWake: store.nextWake.bind(store),
    signal: store.signal.bind(store),
    mailbox: store.mailbox.bind(store),
    // A stream append is a write like the others: none may come from an attempt after its crash.
    ...(store.appendStream === undefined ||
    store.readStream === undefined ||
    store.streamPosition === undefined
      ? {}
      : {
          appendStream: guard('appendStream', store.appendStream.bind(store)),
          readStream: store.readStream.bind(store),
          streamPosition: store.streamPosition.bind(store),
          ...(store.streamsWithWrites === true ? { streamsWithWrites: true } : {}),
        }),
  };
}

/** Effects started (journaled) and not settled by the time of the crash, from the boundary trace. */
function inFlightAt(trace: readonly Boundary[]): Set<string> {
  const inFlight = new Set<string>();
  for (const boundary of trace) {
    if (boundary.point !== 'journal.after') continue;
    for (const entry of boundary.entries ?? []) {
      const [type, ...rest] = entry.split(':');
      const effectId = rest.join(':');
      if (type === 'started') inFlight.add(effectId);
      if (type === 'settled') inFlight.delete(effectId);
    }
  }
  return inFlight;
}

/**
 * Runs the scenario once without interruption, then once per boundary it passed: crash there, move time
 * past the lease, resume, and check DESIGN.md's invariants against the uninterrupted run. Returns the
 * report; every violation is listed in it (the caller asserts `violations` is empty).
 */
export async function exploreCrashes<Input, Result>(
  scenario: CrashScenario<Input, Result>,
): Promise<CrashReport> {
  const keyOf = scenario.keyOf ?? ((effectId: string) => effectId.split('/').at(-1) ?? effectId);
  const leaseMs = scenario.leaseMs ?? 30_000;

  const baselineClock = createFakeClock({ autoAdvance: true });
  const baselineWorld = scenario.setup();
  const baselineStore = await (scenario.store?.(baselineClock) ??
    memoryStore({ clock: baselineClock }));
  const trace: Boundary[] = [];
  const traced = { onBoundary: (b: Boundary) => void trace.push(b) };
  const baselineRun = baselineWorld.create(baselineStore, baselineClock);
  const baselineResult = await untilEnded(
    () => baselineRun.execute(scenario.input, { runId, ...traced }),
    () => baselineRun.resume(runId, traced),
    baselineStore,
    baselineClock,
  );
  const baseline = scenario.observe(baselineResult);
  const baselineEffects = { ...baselineWorld.sideEffects() };
  const baselineModelCalls = baselineWorld.modelCalls?.();
  const violations: string[] = [];
  if (baseline.unknown.length > 0)
    violations.push('the uninterrupted run reported outcome unknown');

  const cases: CrashCase[] = [];
  const byPoint: Record<string, number> = {};
  for (let index = 0; index < trace.length; index += 1) {
    const boundary = trace[index]!;
    byPoint[boundary.point] = (byPoint[boundary.point] ?? 0) + 1;
    const crashCase = await crashAt(index, boundary);
    cases.push(crashCase);
    for (const violation of crashCase.violations) {
      violations.push(
        `crash #${index} at ${boundary.point} ${boundary.effectId ?? boundary.entries?.join(',') ?? ''}: ${violation}`,
      );
    }
  }
  return {
    baseline,
    baselineSideEffects: baselineEffects,
    boundaries: trace.length,
    byPoint,
    cases,
    violations,
  };

  async function crashAt(index: number, boundary: Boundary): Promise<CrashCase> {
    const problems: string[] = [];
    const clock = createFakeClock({ autoAdvance: true });
    const world = scenario.setup();
    const store = await (scenario.store?.(clock) ?? memoryStore({ clock }));
    let crashed = false;
    const seen: Boundary[] = [];
    let passed = 0;
    const crashHook: BoundaryHook = (b) => {
      // An `.after` boundary is passed once its write landed, so it counts even when the crash falls there.
      seen.push(b);
      if (passed++ === index) {
        crashed = true;
        throw new SimulatedCrash(b);
      }
    };
    const dying = watchWrites(
      store,
      () => crashed,
      (what) => problems.push(`the crashed attempt called ${what} after the crash`),
    );
    try {
      const dyingRun = world.create(dying, clock);
      await untilEnded(
        () => dyingRun.execute(scenario.input, { runId, onBoundary: crashHook }),
        () => dyingRun.resume(runId, { onBoundary: crashHook }),
        store,
        clock,
      );
      problems.push(
        'the run finished without passing the crash boundary (nondeterministic boundaries?)',
      );
    } catch (error) {
      if (!(error instanceof SimulatedCrash))
        problems.push(`the crashed attempt threw ${String(error)}`);
    }
    const epochAtCrash = (await store.load(runId))?.run.epoch ?? 0;
    const inFlight = new Set([...inFlightAt(seen)].map(keyOf));

    // The process is gone; its lease runs out on the store's clock.
    await clock.advance(leaseMs + 1);
    const survivor = world.create(store, clock);
    let observed: Observation | undefined;
    try {
      observed = scenario.observe(
        await untilEnded(
          () => survivor.resume(runId),
          () => survivor.resume(runId),
          store,
          clock,
        ),
      );
    } catch (error) {
      problems.push(`resume threw ${String(error)}`);
    }
    const epochAfter = (await store.load(runId))?.run.epoch ?? 0;
    if (boundary.point !== 'checkpoint.after' || boundary.status !== 'completed') {
      if (!(epochAfter > epochAtCrash))
        problems.push(`epoch did not rise (${epochAtCrash} then ${epochAfter})`);
    }

    if (observed !== undefined) {
      if (!isDeepStrictEqual(observed.output, baseline.output)) {
        problems.push(
          `output ${JSON.stringify(observed.output)} differs from ${JSON.stringify(baseline.output)}`,
        );
      }
      if (!isDeepStrictEqual(observed.usage, baseline.usage)) {
        problems.push(
          `usage ${JSON.stringify(observed.usage)} differs from ${JSON.stringify(baseline.usage)}`,
        );
      }
      for (const key of observed.unknown) {
        if (!inFlight.has(key))
          problems.push(`call ${key} was reported unknown but was not in flight`);
      }
      checkSideEffects(world.sideEffects(), new Set(observed.unknown), problems);
      const modelCalls = world.modelCalls?.();
      if (
        modelCalls !== undefined &&
        baselineModelCalls !== undefined &&
        modelCalls > baselineModelCalls + 1
      ) {
        problems.push(
          `the model was called ${modelCalls} times, the uninterrupted run ${baselineModelCalls}`,
        );
      }
      // Invariant 5: resuming a completed run performs nothing and returns the stored result.
      let effectsOnReplay = 0;
      const again = scenario.observe(
        await survivor.resume(runId, {
          onBoundary: (b) => {
            if (b.point === 'effect.before') effectsOnReplay += 1;
          },
        }),
      );
      if (effectsOnReplay > 0)
        problems.push(`resuming the completed run performed ${effectsOnReplay} effects`);
      if (!isDeepStrictEqual(again.output, baseline.output))
        problems.push('resuming the completed run gave another output');
    }
    return { index, boundary, unknown: observed?.unknown ?? [], violations: problems };
  }

  /**
   * Runs `first`, then, each time the attempt ends waiting, lets the scenario's world act and `resume`s:
   * the result of the attempt that ends the run.
   */
  async function untilEnded(
    first: () => Promise<Result>,
    resume: () => Promise<Result>,
    store: DurableStore,
    clock: FakeClock,
  ): Promise<Result> {
    let attempt = first;
    for (let waits = 0; ; waits += 1) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof RunWaitingError) || scenario.onWaiting === undefined || waits >= 50)
          throw error;
        await scenario.onWaiting({ store, clock, runId, wait: error.wait as unknown as RunWait });
        attempt = resume;
      }
    }
  }

  function checkSideEffects(
    effects: Readonly<Record<string, number>>,
    unknown: ReadonlySet<string>,
    problems: string[],
  ): void {
    for (const key of new Set([...Object.keys(effects), ...Object.keys(baselineEffects)])) {
      const count = effects[key] ?? 0;
      const expected = baselineEffects[key] ?? 0;
      if (unknown.has(key)) {
        if (count > expected)
          problems.push(`in-flight call ${key} ran ${count} times although reported unknown`);
      } else if (scenario.idempotent?.(key)) {
        if (count < expected || count > expected + 1)
          problems.push(
            `idempotent call ${key} ran ${count} times, expected ${expected} or one more`,
          );
      } else if (count !== expected) {
        problems.push(`call ${key} ran ${count} times, expected ${expected}`);
      }
    }
  }
}

/** The observation of an agent result: its output, usage, and the tool calls it answered as unknown. */
export function observeAgent(result: {
  output: unknown;
  usage: Usage;
  messages: ReadonlyArray<{ role: string; toolCallId?: string; outcome?: string }>;
}): Observation {
  return {
    output: result.output,
    usage: result.usage,
    unknown: result.messages
      .filter((message) => message.role === 'tool' && message.outcome === 'unknown')
      .map((message) => message.toolCallId ?? ''),
  };
}

/**
 * The observation of a planner result: its output, usage, and the calls it answered as unknown: nodes
 * (by node id) and the tool calls of its child agents (by tool call id).
 */
export function observePlanner(result: {
  output: unknown;
  usage: Usage;
  nodes: ReadonlyArray<{
    id: string;
    status: string;
    child?: { unknownToolCalls: readonly string[] };
  }>;
}): Observation {
  return {
    output: result.output,
    usage: result.usage,
    unknown: result.nodes.flatMap((node) => [
      ...(node.status === 'unknown' ? [node.id] : []),
      ...(node.child?.unknownToolCalls ?? []),
    ]),
  };
}
