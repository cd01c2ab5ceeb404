import { LeaseLostError, type Fence } from '@cairn/sdk';
import type { Reply } from './context.js';

/** The `LeaseLostError` for a fenced script's refusal (see `fence` in the prelude), saying why it was refused. */
export function refusal(fence: Fence, reply: Reply): LeaseLostError {
  const { runId, epoch } = fence;
  switch (reply[0]) {
    case 'missing':
      return new LeaseLostError(runId, epoch, 'the run no longer exists');
    case 'recreated':
      return new LeaseLostError(runId, epoch, 'the run was deleted and created again');
    case 'root':
      return new LeaseLostError(
        runId,
        epoch,
        `the lease of its root run "${fence.root?.runId ?? ''}" was lost`,
      );
    case 'late':
      return new LeaseLostError(runId, epoch, 'its lease ran out before the write reached Redis');
    case 'ended':
      return new LeaseLostError(runId, epoch, `the run already ended ${String(reply[1])}`);
    case 'older':
      return new LeaseLostError(runId, epoch, 'a newer checkpoint is stored');
    default:
      return new LeaseLostError(runId, epoch);
  }
}
