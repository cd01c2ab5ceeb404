/** A figure over repetitions: the median of the per-repetition values, with their min and max. */
export interface Figure {
  median: number;
  min: number;
  max: number;
  /** Every repetition's value, in order. */
  reps: number[];
}

/** The median of a list (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** The q-quantile by linear interpolation between closest ranks; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  const lowValue = sorted[low]!;
  return lowValue + (sorted[high]! - lowValue) * (position - low);
}

/** The figure of one measure taken once per repetition. */
export function figure(reps: readonly number[]): Figure {
  return {
    median: median(reps),
    min: reps.length === 0 ? Number.NaN : Math.min(...reps),
    max: reps.length === 0 ? Number.NaN : Math.max(...reps),
    reps: [...reps],
  };
}

/** Milliseconds since an arbitrary origin, with sub-millisecond resolution. */
export function now(): number {
  return performance.now();
}

/** Runs `repeat` `count` times in sequence and returns what each repetition gave. */
export async function repeat<T>(count: number, run: (rep: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let rep = 0; rep < count; rep += 1) results.push(await run(rep));
  return results;
}

/** Waits `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
