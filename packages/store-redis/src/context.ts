import type { Gate, LuaScript } from './client.js';
import type { Holdings } from './holdings.js';
import { bucketOf, type KeySpace } from './keys.js';
import type { Liveness } from './liveness.js';

/** What the store's modules share: the client, the key space, and the leases this instance holds. */
export interface StoreContext {
  gate: Gate;
  keys: KeySpace;
  /**
   * A script on Cluster sees only its run's slot (its bucket's): another run's keys are then read or written in
   * separate steps. The run's bucket indexes share that slot and are always written in the script.
   */
  cluster: boolean;
  holdings: Holdings;
  /** The instance's liveness; none with `liveness: 'lease'`. */
  liveness: Liveness | undefined;
}

/** A script's reply: a word saying what happened, then its data. */
export type Reply = [string, ...unknown[]];

/**
 * The KEYS of a script on `runId` (the layout the prelude describes): `related` names two keys of another run
 * the script may read or write, which only a single node can give it (on Cluster that run may be in another
 * slot), then the run's mailbox, then the indexes of the run's bucket, then its liveness keys, then the run's
 * stream.
 */
export function scriptKeys(
  ctx: StoreContext,
  runId: string,
  related?: readonly [string, string],
): string[] {
  const own = ctx.keys.run(runId);
  const base = [own.run, own.journal, own.lease, own.children];
  const others = ctx.cluster || related === undefined ? [own.run, own.children] : related;
  const bucket = bucketOf(runId);
  return [
    ...base,
    ...others,
    own.mailbox,
    ...ctx.keys.bucketIndexes(bucket),
    ctx.keys.live(bucket),
    ctx.keys.held(bucket),
    own.stream,
  ];
}

/** Runs a script on one run's keys. */
export async function runScript(
  ctx: StoreContext,
  operation: string,
  script: LuaScript,
  runId: string,
  args: string[],
  related?: readonly [string, string],
): Promise<Reply> {
  return (await ctx.gate.script(operation, script, scriptKeys(ctx, runId, related), args)) as Reply;
}

/** Some fields of a run's hash (absent ones left out); empty for a run that does not exist. */
export async function readFields(
  ctx: StoreContext,
  runId: string,
  names: readonly string[],
): Promise<Map<string, string>> {
  const values = await ctx.gate.call('read a run', (client) =>
    client.hmget(ctx.keys.run(runId).run, ...names),
  );
  const fields = new Map<string, string>();
  names.forEach((name, i) => {
    const value = values[i];
    if (value !== null && value !== undefined) fields.set(name, value);
  });
  return fields;
}

/** The server's clock, in milliseconds: the one that decides when a lease ran out. */
export async function serverNow(ctx: StoreContext): Promise<number> {
  const [seconds, micros] = await ctx.gate.call('read the server clock', (client) => client.time());
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
