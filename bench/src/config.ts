/** How big each row's workload is. `quick` is a smoke check for CI: same rows, tiny workloads. */
export interface BenchConfig {
  quick: boolean;
  /** Repetitions of every row; each figure is the median over them, with min and max. */
  reps: number;
  /** Takeover repetitions (each one kills a worker process). */
  takeoverReps: number;
  limit: {
    singleUpdates: number;
    concurrentUpdates: number;
    connections: number;
    payloadBytes: number;
  };
  perStep: { runs: number; trips: number };
  throughput: { runs: number; trips: number; concurrency: number; poolMax: number };
  dbos: { workflows: number; steps: number; poolSize: number };
  takeover: { leaseMs: number; pollMs: number };
  growth: { trips: number; toolResultBytes: number };
  memory: { runs: number };
}

export const fullConfig: BenchConfig = {
  quick: false,
  reps: 3,
  takeoverReps: 5,
  limit: { singleUpdates: 5_000, concurrentUpdates: 16_000, connections: 32, payloadBytes: 1024 },
  perStep: { runs: 50, trips: 10 },
  throughput: { runs: 500, trips: 10, concurrency: 250, poolMax: 10 },
  dbos: { workflows: 500, steps: 10, poolSize: 10 },
  takeover: { leaseMs: 30_000, pollMs: 1_000 },
  growth: { trips: 200, toolResultBytes: 200 },
  memory: { runs: 1_000 },
};

export const quickConfig: BenchConfig = {
  quick: true,
  reps: 1,
  takeoverReps: 1,
  limit: { singleUpdates: 200, concurrentUpdates: 640, connections: 32, payloadBytes: 1024 },
  perStep: { runs: 3, trips: 10 },
  throughput: { runs: 20, trips: 10, concurrency: 50, poolMax: 10 },
  dbos: { workflows: 20, steps: 10, poolSize: 10 },
  takeover: { leaseMs: 30_000, pollMs: 1_000 },
  growth: { trips: 20, toolResultBytes: 200 },
  memory: { runs: 50 },
};
