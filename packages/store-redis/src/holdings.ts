import type { Fence } from '@cairn/sdk';

/** What this store instance knows of a lease it claimed or a child it adopted. */
export interface Holding {
  incarnation: string;
  epoch: number;
  /** The token the run hash names while this holder holds it. */
  token: string;
  /** The lease's end on the server's clock, as this holder knows it. */
  until: number;
  /** For an adopted child: the root run whose lease (and its renewals) bounds the child's writes. */
  root?: { runId: string; incarnation: string };
}

/**
 * Leases this store instance holds, so its writes can carry the holder's token and deadline: a write that
 * reaches Redis after the lease ran out, or after the run was claimed again, is refused by the script.
 */
export class Holdings {
  private readonly held = new Map<string, Holding>();

  set(runId: string, holding: Holding): void {
    this.held.set(runId, holding);
  }

  get(runId: string, incarnation: string, epoch: number): Holding | undefined {
    const holding = this.held.get(runId);
    return holding?.incarnation === incarnation && holding.epoch === epoch ? holding : undefined;
  }

  /** Forgets a lease, and the children adopted under it: the runtime never releases those one by one. */
  forget(runId: string, incarnation: string, epoch: number): void {
    if (this.get(runId, incarnation, epoch) === undefined) return;
    this.held.delete(runId);
    for (const [id, holding] of this.held) {
      if (
        holding.root?.runId === runId &&
        holding.root.incarnation === incarnation &&
        holding.epoch === epoch
      )
        this.held.delete(id);
    }
  }

  /** The runs this instance holds a lease of its own on (not a child adopted under one), lost ones included. */
  rootRunIds(): string[] {
    return [...this.held].filter(([, holding]) => holding.root === undefined).map(([id]) => id);
  }

  renewed(runId: string, incarnation: string, epoch: number, until: number): void {
    const holding = this.get(runId, incarnation, epoch);
    if (holding !== undefined) holding.until = until;
  }

  /** The token and deadline a write under `fence` carries: none when this instance holds no lease at it. */
  fence(fence: Fence): { token: string; deadline: string } {
    const holding = this.get(fence.runId, fence.incarnation, fence.epoch);
    if (holding === undefined) return { token: '', deadline: '' };
    const root =
      holding.root === undefined
        ? undefined
        : this.get(holding.root.runId, holding.root.incarnation, fence.epoch);
    return { token: holding.token, deadline: String(Math.max(holding.until, root?.until ?? 0)) };
  }
}
