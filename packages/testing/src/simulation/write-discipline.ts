import type { Boundary } from '@cairn/sdk';

/**
 * Checks, from an attempt's boundaries, the promise behind "a settled tool call never runs again": a
 * non-idempotent result that settles while other effects of its run still run is journaled (a
 * `journal.after` naming it) before the run moves on (checkpoints, or starts another effect). Only the last
 * result of a step may wait for the checkpoint that follows it. A result the runtime treats as written and
 * then drops (defect 4 of #13: a buffer sliced after an append that was already on its way) breaks this
 * without any crash, so this check sees it in every schedule, not only in those that crash at the right
 * point.
 */
export class WriteDiscipline {
  private readonly running = new Map<string, Set<string>>();
  private readonly started = new Map<string, Set<string>>();
  private readonly owed = new Map<string, Set<string>>();

  constructor(
    private readonly nonIdempotent: (effectId: string) => boolean,
    private readonly violation: (text: string) => void,
  ) {}

  pass(boundary: Boundary): void {
    const { runId, point } = boundary;
    const running = this.of(this.running, runId);
    const owed = this.of(this.owed, runId);
    if (point === 'effect.before' && boundary.effectId !== undefined) {
      const started = this.of(this.started, runId);
      if (!started.has(boundary.effectId)) {
        this.moveOn(runId, owed, `started ${boundary.effectId}`);
        started.add(boundary.effectId);
      }
      running.add(boundary.effectId);
    } else if (point === 'effect.after' && boundary.effectId !== undefined) {
      running.delete(boundary.effectId);
      if (running.size > 0 && this.nonIdempotent(boundary.effectId)) owed.add(boundary.effectId);
    } else if (point === 'journal.after') {
      for (const entry of boundary.entries ?? []) {
        if (entry.startsWith('settled:')) owed.delete(entry.slice('settled:'.length));
      }
    } else if (point === 'checkpoint.before') {
      this.moveOn(runId, owed, 'checkpointed');
    }
  }

  private moveOn(runId: string, owed: Set<string>, how: string): void {
    for (const effectId of owed) {
      this.violation(
        `${runId} ${how} before the settled result of ${effectId}, which settled while others ran, was written`,
      );
    }
    owed.clear();
  }

  private of(map: Map<string, Set<string>>, runId: string): Set<string> {
    let set = map.get(runId);
    if (set === undefined) map.set(runId, (set = new Set()));
    return set;
  }
}
