import { readdirSync, readFileSync } from 'node:fs';

/**
 * Linux's USER_HZ, the unit of /proc's CPU times: 100 on every architecture Node runs on (the kernel keeps
 * it fixed for user space whatever its own tick rate).
 */
const msPerTick = 10;

/** CPU time read from /proc at one moment: the whole machine's, and each Postgres backend's of a database. */
export interface CpuReading {
  /** Busy time of all CPUs since boot (everything but idle and iowait); NaN without /proc/stat. */
  machineMs: number;
  /** User + system time of each backend serving the database, by pid. */
  backends: Map<number, number>;
}

/** CPU time spent between two readings. */
export interface CpuSpent {
  machineMs: number;
  /** Of the backends alive at the second reading (all their life if they started in between); NaN if none. */
  backendsMs: number;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function machineBusyMs(): number {
  const line = readText('/proc/stat')?.split('\n')[0];
  if (line === undefined || !line.startsWith('cpu ')) return Number.NaN;
  const [user, nice, system, , , irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (
    ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) *
    msPerTick
  );
}

/**
 * Backends of `database` on this machine, found by the process title Postgres gives them
 * (`postgres: [cluster: ]user database host(port) state`), with their user + system CPU time.
 */
function backendCpu(database: string): Map<number, number> {
  const found = new Map<number, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return found;
  }
  for (const pid of pids) {
    const title = readText(`/proc/${pid}/cmdline`);
    if (title === undefined || !title.startsWith('postgres:')) continue;
    if (!title.replace(/\0/g, ' ').split(' ').includes(database)) continue;
    const stat = readText(`/proc/${pid}/stat`);
    if (stat === undefined) continue;
    // Fields after the command name in parentheses: state is field 3, utime 14 and stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    found.set(Number(pid), (Number(fields[11]) + Number(fields[12])) * msPerTick);
  }
  return found;
}

/** Reads the machine's CPU time and that of the Postgres backends serving `database`. */
export function readCpu(database: string): CpuReading {
  return { machineMs: machineBusyMs(), backends: backendCpu(database) };
}

/**
 * What was spent between two readings. A backend that exited in between is missed (its time goes to the
 * postmaster's children total, shared with every other database), so read while the workload's
 * connections are still open.
 */
export function cpuBetween(before: CpuReading, after: CpuReading): CpuSpent {
  let backendsMs = 0;
  for (const [pid, ms] of after.backends) backendsMs += ms - (before.backends.get(pid) ?? 0);
  return {
    machineMs: after.machineMs - before.machineMs,
    backendsMs: after.backends.size === 0 ? Number.NaN : backendsMs,
  };
}
