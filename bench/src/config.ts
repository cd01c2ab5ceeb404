/** Worker processes draining a queue at once, each at a concurrency. */
export interface DrainSetup {
  processes: number;
  concurrency: number;
}

/** How big each row's workload is. `quick` is a smoke check for CI: same rows, tiny workloads. */
export interface BenchConfig {
  quick: boolean;
  /** Repetitions of every row; each figure is the median over them, with min and max. */
  reps: number;
  /** Takeover repetitions (each one kills a worker process). */
  takeoverReps: number;
  /** Interleaved Cairn / DBOS pairs of the DBOS row (each: a sequential and a concurrent measure). */
  pairs: number;
  limit: {
    singleUpdates: number;
    concurrentUpdates: number;
    connections: number;
    payloadBytes: number;
  };
  /** Also the size of the DBOS row's sequential pairs: as many workflows of as many steps. */
  perStep: { runs: number; trips: number };
  /** Also the size of the DBOS row's concurrent pairs: as many workflows started at once. */
  throughput: { runs: number; trips: number; concurrency: number; poolMax: number };
  dbos: { poolSize: number };
  claimLatency: { runs: number; trips: number; concurrency: number; poolMax: number };
  drain: { runs: number; trips: number; poolMax: number; setups: DrainSetup[] };
  takeover: { leaseMs: number; pollMs: number };
  massTakeover: { runs: number };
  growth: { trips: number; toolResultBytes: number };
  memory: { runs: number };
  /** Sizes of the plans whose per-node cost is compared (the largest against the smallest). */
  planner: { sizes: number[] };
  /** Runs held in flight on Redis while an idle worker's claim polls are counted. */
  claimPoll: { runs: number; polls: number };
  /** Pairs of halves without and with the payload codec (off, on), each `runs` sequential runs of `trips`. */
  codec: { pairs: number; runs: number; trips: number };
  /** Stored runs whose payload key is rotated while `inFlight` runs of `trips` go on; runs moved at a time. */
  rotation: { storedRuns: number; inFlight: number; trips: number; concurrency: number };
}

export const fullConfig: BenchConfig = {
  quick: false,
  reps: 3,
  takeoverReps: 5,
  pairs: 5,
  limit: { singleUpdates: 5_000, concurrentUpdates: 16_000, connections: 32, payloadBytes: 1024 },
  perStep: { runs: 50, trips: 10 },
  throughput: { runs: 500, trips: 10, concurrency: 250, poolMax: 10 },
  dbos: { poolSize: 10 },
  claimLatency: { runs: 2_000, trips: 2, concurrency: 250, poolMax: 10 },
  drain: {
    runs: 10_000,
    trips: 2,
    poolMax: 10,
    setups: [
      { processes: 1, concurrency: 100 },
      { processes: 3, concurrency: 100 },
      { processes: 3, concurrency: 33 },
    ],
  },
  takeover: { leaseMs: 30_000, pollMs: 1_000 },
  massTakeover: { runs: 1_000 },
  growth: { trips: 200, toolResultBytes: 200 },
  memory: { runs: 1_000 },
  planner: { sizes: [100, 1_000, 10_000] },
  claimPoll: { runs: 10_000, polls: 5 },
  codec: { pairs: 5, runs: 50, trips: 10 },
  rotation: { storedRuns: 100_000, inFlight: 250, trips: 10, concurrency: 32 },
};

export const quickConfig: BenchConfig = {
  quick: true,
  reps: 1,
  takeoverReps: 1,
  pairs: 1,
  limit: { singleUpdates: 200, concurrentUpdates: 640, connections: 32, payloadBytes: 1024 },
  perStep: { runs: 3, trips: 10 },
  throughput: { runs: 20, trips: 10, concurrency: 50, poolMax: 10 },
  dbos: { poolSize: 10 },
  claimLatency: { runs: 100, trips: 2, concurrency: 50, poolMax: 10 },
  drain: {
    runs: 200,
    trips: 2,
    poolMax: 10,
    setups: [
      { processes: 1, concurrency: 100 },
      { processes: 3, concurrency: 33 },
    ],
  },
  takeover: { leaseMs: 30_000, pollMs: 1_000 },
  massTakeover: { runs: 50 },
  growth: { trips: 20, toolResultBytes: 200 },
  memory: { runs: 50 },
  planner: { sizes: [100, 1_000] },
  claimPoll: { runs: 500, polls: 2 },
  codec: { pairs: 1, runs: 3, trips: 10 },
  rotation: { storedRuns: 100, inFlight: 10, trips: 2, concurrency: 16 },
};
