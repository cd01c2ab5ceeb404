import type { CairnError } from '@cairn/sdk';
import type { Gate } from './client.js';
import type { Holdings } from './holdings.js';
import { bucketOf, type KeySpace } from './keys.js';
import { keepAlive } from './lua/keep-alive.js';

/**
 * How long a store instance's liveness lasts from its last renewal, and how often it is renewed. A killed
 * process is known gone within `livenessMs` and its runs are taken over `takeoverGraceMs` later (3.3 to 3.5 s
 * with the default grace); a process whose renewals stall for up to `livenessMs - renewEveryMs +
 * takeoverGraceMs` keeps its runs. The grace is what tolerates a blip or a stalled event loop; the liveness
 * only has to outlast a renewal or two that come late, so it is short: a kill is seen in half a second.
 */
export const livenessMs = 500;
export const renewEveryMs = 200;

/** What a liveness needs of its store. */
export interface LivenessContext {
  /** The id the instance's claims record as their run's `holder`. */
  instance: string;
  gate: Gate;
  keys: KeySpace;
  holdings: Holdings;
  /** How long another instance's liveness must have been gone before this one takes its runs. */
  graceMs: number;
}

/**
 * A store instance's liveness on Redis. Redis keeps no session for a client, so the instance says it is alive:
 * in each bucket where it holds a run, the bucket's `live` set scores it by when its liveness ends, on the
 * server's clock. The claim that gives it a run in a bucket writes its score there (in the claim's script, the
 * run's slot); a timer of its own (unref'd) renews every bucket it holds a run in, a script per bucket, every
 * `renewEveryMs`. A claimer's script, in the same slot, takes a run whose holder's liveness ended at least the
 * grace ago, whatever its lease says; a holder that renews within the grace keeps every run, epochs unchanged.
 *
 * Why in every bucket rather than one key per instance: whether the holder is gone and the takeover must be
 * decided in one script (a holder renewing between a check and a takeover in separate steps would lose a run it
 * kept), and on Cluster a script sees its run's slot only. One key per instance would sit in one slot, so a
 * claim would read it in a step of its own and could not re-check it where it writes. Kept beside the runs, the
 * check, the epoch bump and the overwritten lease key are one script, on a single node and on Cluster alike;
 * the price is one renewal per bucket the instance holds runs in (at most its concurrency, at most 64).
 *
 * After its own calls failed (a lost connection, a failover: every holder's renewals failed as well), the
 * instance takes no other instance's runs by their liveness until a grace after its first call that got an
 * answer: the others renew theirs meanwhile, so an outage is not taken for their deaths.
 */
export class Liveness {
  readonly instance: string;
  private timer: NodeJS.Timeout | undefined;
  /** The renewals on their way, by bucket: a bucket whose server is slow to answer holds up no other. */
  private readonly renewing = new Map<number, Promise<void>>();
  private closed = false;
  private troubled = false;
  private rejoinedAt: number | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private readonly listeners = new Set<() => void>();
  /** Per bucket, the end of this instance's liveness there as last confirmed (ms, server clock). */
  private readonly confirmed = new Map<number, number>();

  constructor(private readonly ctx: LivenessContext) {
    this.instance = ctx.instance;
    ctx.gate.observer = (outcome) => this.observe(outcome);
  }

  /**
   * The ARGV a claim's script takes: this instance, or '' once the store closed (its claims then record no
   * liveness and run by their leases alone); the liveness's length; the grace, or '' while this instance may
   * take no run by its holder's liveness. Starts the renewals on the first claim.
   */
  claimArgs(now = Date.now()): [instance: string, lengthMs: string, grace: string] {
    if (!this.closed) this.start();
    return [this.closed ? '' : this.instance, String(livenessMs), this.grace(now)];
  }

  /** A claim of `runId` that began at `serverNow` (ms, server clock) recorded this instance's liveness there. */
  claimed(runId: string, serverNow: number): void {
    if (!this.closed) this.confirm(bucketOf(runId), serverNow + livenessMs);
  }

  /**
   * A deadline for a write to a child of root run `rootId` on Cluster, where the child's script cannot see its
   * root: `deadline` (the root's lease end), but no later than this instance's liveness in the root's bucket, as
   * last confirmed, plus the grace. Past that, another instance may have taken the root over before its lease
   * ran out (an instance with the same grace, which instances sharing a prefix should have), so the write is
   * refused as late: the root's takeover fences the child's writes as its lease's end did.
   */
  childDeadline(rootId: string, deadline: string): string {
    const alive = this.confirmed.get(bucketOf(rootId));
    if (deadline === '' || alive === undefined) return deadline;
    return String(Math.min(Number(deadline), alive + this.ctx.graceMs));
  }

  /** The takeover grace in ms, or '' while this instance came back from failed calls less than a grace ago. */
  grace(now = Date.now()): string {
    const settled =
      !this.troubled &&
      (this.rejoinedAt === undefined || now - this.rejoinedAt >= this.ctx.graceMs);
    return settled ? String(this.ctx.graceMs) : '';
  }

  /** Calls `listener` when another holder's grace ends, so a worker claims then rather than at its next poll. */
  onTakeover(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A claim poll found another holder gone, its grace ending in `ms`: the listeners are told then. */
  takeoverIn(ms: number, now = Date.now()): void {
    if (this.closed || this.listeners.size === 0 || now + ms >= this.wakeAt) return;
    clearTimeout(this.wakeTimer);
    this.wakeAt = now + ms;
    // A few ms late, so the server's clock has passed the grace's end too.
    this.wakeTimer = setTimeout(() => {
      this.wakeAt = Number.POSITIVE_INFINITY;
      for (const listener of this.listeners) listener();
    }, ms + 5);
    this.wakeTimer.unref();
  }

  /**
   * Stops the renewals and ends the liveness now, as far as Redis answers: what the instance still holds is
   * taken over once the grace passed. Its later claims record no liveness.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.wakeTimer);
    this.listeners.clear();
    // A renewal landing after the end would extend the liveness again.
    await Promise.all(this.renewing.values());
    await Promise.all(
      [...this.buckets()].map((bucket) => this.send(bucket, '0').catch(() => undefined)),
    );
  }

  /**
   * A call that failed as retryable: trouble, until one gets an answer. A call answered after longer than a
   * liveness lasts counts as a return from trouble as well: its server may have been away meanwhile (a Cluster
   * failover, where the client holds calls until a replica is promoted instead of failing them), and then every
   * holder's renewals were held up as this call was.
   */
  private observe(outcome: { error: CairnError } | { tookMs: number }): void {
    if ('error' in outcome) {
      if (outcome.error.retryable) this.troubled = true;
    } else if (this.troubled || outcome.tookMs > livenessMs) {
      this.troubled = false;
      this.rejoinedAt = Date.now();
    }
  }

  private start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.renew(), renewEveryMs);
    this.timer.unref();
  }

  /** Renews every bucket this instance holds a run in, but one whose last renewal has not come back yet. */
  private renew(): void {
    for (const bucket of this.buckets()) {
      if (this.renewing.has(bucket)) continue;
      // A renewal that fails is tried again at the next tick; the gate has noted the trouble.
      const renewal = this.send(bucket, String(livenessMs))
        .catch(() => undefined)
        .finally(() => this.renewing.delete(bucket));
      this.renewing.set(bucket, renewal);
    }
  }

  /** The buckets this instance holds a run in. */
  private buckets(): Set<number> {
    return new Set(this.ctx.holdings.rootRunIds().map(bucketOf));
  }

  /** Sends `keepAlive` with `lengthMs` to `bucket` and records what it confirmed. */
  private async send(bucket: number, lengthMs: string): Promise<void> {
    const { gate, keys } = this.ctx;
    const until = await gate.script(
      'renew the liveness',
      keepAlive,
      [keys.live(bucket)],
      [this.instance, lengthMs],
    );
    if (typeof until === 'number' && until > 0) this.confirm(bucket, until, lengthMs === '0');
  }

  /** Records the liveness's end in `bucket`; only an end (`ended`) may lower it. */
  private confirm(bucket: number, until: number, ended = false): void {
    const known = this.confirmed.get(bucket);
    if (ended || known === undefined || until > known) this.confirmed.set(bucket, until);
  }
}
