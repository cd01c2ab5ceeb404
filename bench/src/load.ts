import { cpus, loadavg } from 'node:os';

/** How busy the machine was at one moment. */
export interface LoadReading {
  /** `os.loadavg()[0]`: runnable processes averaged over the last minute. */
  load1: number;
  cpus: number;
}

/** A row's load at its start and end, and how long it took. */
export interface RowLoad {
  before: LoadReading;
  after: LoadReading;
  seconds: number;
}

/** Above this share of the CPUs, the one-minute load says other work competed with the row. */
const busyShare = 0.7;

/** The machine's one-minute load average and CPU count now. */
export function readLoad(): LoadReading {
  return { load1: loadavg()[0]!, cpus: cpus().length };
}

/** True when the load was above 0.7 x the CPUs. */
export function isBusy(reading: LoadReading): boolean {
  return reading.load1 > busyShare * reading.cpus;
}

/**
 * The lines that tell a row's load: the readings at both ends and, when either was busy, a warning that the
 * row's figures shared the machine.
 */
export function describeLoad(load: RowLoad): string[] {
  const lines = [
    `load1 ${load.before.load1.toFixed(2)} before, ${load.after.load1.toFixed(2)} after (${load.before.cpus} CPUs), ${load.seconds.toFixed(1)} s`,
  ];
  if (isBusy(load.before) || isBusy(load.after)) {
    lines.push(
      `WARNING: the machine was busy (load1 above ${busyShare} x ${load.before.cpus} CPUs = ${(busyShare * load.before.cpus).toFixed(1)}): other work shared the CPUs and the server`,
    );
  }
  return lines;
}
