import type { Fence } from '@cairn/sdk';
import { rootCurrent } from './children.js';
import type { LuaScript } from './client.js';
import { runScript, type Reply, type StoreContext } from './context.js';
import { childDeadline } from './leases.js';
import { refusal } from './refusal.js';

/**
 * Runs a fenced write (a script opening with the prelude's `fence`): the reply, or the script's refusal thrown
 * as `LeaseLostError` unless the reply's word is `ok` or one of `accepted`.
 */
export type FencedWrite = (
  operation: string,
  script: LuaScript,
  fence: Fence,
  args: string[],
  accepted?: readonly string[],
) => Promise<Reply>;

/**
 * The store's fenced writes: each script gets the fence's ARGV[1..6] (see the prelude) before its own, with
 * the holder's token and deadline when this store instance holds the lease, and `settledTtl` ('' for none).
 */
export function fencedWrites(ctx: StoreContext, settledTtl: string): FencedWrite {
  const { cluster, holdings, keys } = ctx;
  return async (operation, script, fence, args, accepted = []) => {
    // A child's write must find its root still at the fence's epoch. A single node checks it in the write's
    // script; on Cluster the root is in another slot and is read just before, and a holder frozen between
    // the read and the write is refused by its deadline (see `childDeadline`).
    const { root } = fence;
    if (root !== undefined && cluster && !(await rootCurrent(ctx, root, fence.epoch)))
      throw refusal(fence, ['root']);
    const { token, deadline } = holdings.fence(fence);
    const rootHash = root === undefined ? undefined : keys.run(root.runId).run;
    const reply = await runScript(
      ctx,
      operation,
      script,
      fence.runId,
      [
        String(fence.epoch),
        token,
        root === undefined ? deadline : childDeadline(ctx, root.runId, deadline),
        settledTtl,
        fence.incarnation,
        root?.incarnation ?? '',
        ...args,
      ],
      rootHash === undefined ? undefined : [rootHash, rootHash],
    );
    if (reply[0] !== 'ok' && !accepted.includes(reply[0])) throw refusal(fence, reply);
    return reply;
  };
}
