/** What this store instance knows of a lease it claimed or a child it adopted. */
export interface Holding {
  epoch: number;
  /** The token the run hash names while this holder holds it. */
  token: string;
  /** The lease's end on the server's clock, as this holder knows it. */
  until: number;
  /** For an adopted child: the parent run whose lease (and its renewals) bounds the child's writes. */
  parent?: string;
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

  get(runId: string, epoch: number): Holding | undefined {
    const holding = this.held.get(runId);
    return holding?.epoch === epoch ? holding : undefined;
  }

  forget(runId: string, epoch: number): void {
    if (this.held.get(runId)?.epoch === epoch) this.held.delete(runId);
  }

  renewed(runId: string, epoch: number, until: number): void {
    const holding = this.get(runId, epoch);
    if (holding !== undefined) holding.until = until;
  }

  /** The token and deadline a write at `epoch` carries: none when this instance holds no lease at it. */
  fence(runId: string, epoch: number): { token: string; deadline: string } {
    const holding = this.get(runId, epoch);
    if (holding === undefined) return { token: '', deadline: '' };
    const parent = holding.parent === undefined ? undefined : this.get(holding.parent, epoch);
    const until = Math.max(holding.until, parent?.until ?? 0);
    return { token: holding.token, deadline: String(until) };
  }
}
