import {
  isTerminalStatus,
  type Fence,
  type JournalEntry,
  type Lease,
  type RunRecord,
  type RunStatus,
} from '@cairn/sdk';

/** The claim and incarnation a write was made against, read when the write was sent. */
export interface WriteContext {
  incarnation: string | undefined;
  /** The highest epoch any claim or adoption of this incarnation had reached when the write was sent. */
  claimedEpoch: number | undefined;
  /** The same for the write's root, for a child's write. */
  rootEpoch: number | undefined;
}

/**
 * What every store instance of a schedule saw, observed from outside the runtime: runs created, claims and
 * adoptions granted, writes the store accepted. It checks at once what must hold of each accepted write
 * (DESIGN.md invariants 1, 11, 12, 13) and keeps what the end-of-schedule checks need.
 */
export class Ledger {
  readonly violations: string[] = [];
  /** Run ids created as child runs. */
  readonly children = new Set<string>();
  /** `${runId}@${incarnation}/${effectId}` of every settled outcome (not `unknown`) a store acknowledged. */
  readonly acknowledged = new Set<string>();
  private readonly incarnation = new Map<string, string>();
  private readonly claims = new Map<string, number>();
  private readonly finalStatus = new Map<string, RunStatus>();

  constructor(private readonly log: (line: string) => void) {}

  created(record: RunRecord): void {
    this.incarnation.set(record.runId, record.incarnation);
    if (record.parent !== null) this.children.add(record.runId);
  }

  deleted(runId: string): void {
    this.incarnation.delete(runId);
  }

  claimed(how: 'acquire' | 'adopt', lease: Lease, process: string): void {
    if (how === 'acquire' && this.children.has(lease.runId)) {
      this.violation(`${process} claimed child run ${lease.runId} on its own (invariant 13)`);
    }
    const key = `${lease.runId}@${lease.incarnation}`;
    this.claims.set(key, Math.max(this.claims.get(key) ?? 0, lease.epoch));
  }

  /** What a write is checked against once the store accepts it; read when it is sent. */
  sending(fence: Fence): WriteContext {
    return {
      incarnation: this.incarnation.get(fence.runId),
      claimedEpoch: this.claims.get(`${fence.runId}@${fence.incarnation}`),
      rootEpoch:
        fence.root === undefined
          ? undefined
          : this.claims.get(`${fence.root.runId}@${fence.root.incarnation}`),
    };
  }

  /** A write the store accepted: checked against what was known when it was sent. */
  accepted(
    kind: 'save' | 'append' | 'updateStatus',
    fence: Fence,
    sent: WriteContext,
    payload: { status?: RunStatus; entries?: readonly JournalEntry[] },
  ): void {
    const what = `${kind} of ${fence.runId}@${fence.incarnation} at epoch ${fence.epoch}`;
    if (sent.incarnation !== undefined && sent.incarnation !== fence.incarnation) {
      this.violation(`${what} landed on incarnation ${sent.incarnation} (invariant 12)`);
    }
    if (sent.claimedEpoch !== undefined && sent.claimedEpoch > fence.epoch) {
      this.violation(`${what} landed after epoch ${sent.claimedEpoch} was claimed (invariant 1)`);
    }
    if (sent.rootEpoch !== undefined && sent.rootEpoch > fence.epoch) {
      this.violation(
        `${what} landed after its root was claimed at ${sent.rootEpoch} (invariant 13)`,
      );
    }
    const key = `${fence.runId}@${fence.incarnation}`;
    if (payload.status !== undefined) {
      const final = this.finalStatus.get(key);
      if (final !== undefined && payload.status !== final) {
        this.violation(`${what} moved the run from ${final} to ${payload.status} (invariant 11)`);
      }
      if (isTerminalStatus(payload.status)) this.finalStatus.set(key, payload.status);
    }
    for (const entry of payload.entries ?? []) {
      if (entry.type === 'settled' && entry.outcome.status !== 'unknown') {
        this.acknowledged.add(`${key}/${entry.effectId}`);
      }
    }
  }

  /** The final status a store accepted for this incarnation, if any. */
  finalOf(runId: string, incarnation: string): RunStatus | undefined {
    return this.finalStatus.get(`${runId}@${incarnation}`);
  }

  violation(text: string): void {
    this.violations.push(text);
    this.log(`VIOLATION ${text}`);
  }
}
