import { randomBytes } from 'node:crypto';
import {
  CairnError,
  LeaseLostError,
  notAChildError,
  RunNotFoundError,
  type Lease,
  type LeaseStore,
} from '@cairn/sdk';
import { parentLeaseCurrent } from './children.js';
import { runScript, type StoreContext } from './context.js';
import { acquireLease } from './lua/acquire.js';
import { adoptRun } from './lua/adopt.js';
import { releaseLease } from './lua/release.js';
import { renewLease } from './lua/renew.js';

/** 64 random bits, hex: a claim token's nonce, a run's incarnation. */
export const nonce = (): string => randomBytes(8).toString('hex');

function positive(ttlMs: number): void {
  if (!(ttlMs > 0))
    throw new CairnError('INVALID_ARGUMENT', `ttlMs must be positive, got ${ttlMs}.`);
}

/**
 * The deadline (ms, server clock) a child's write or adoption under root run `rootId` carries, given its root's
 * lease end. On Cluster the child's script cannot see its root, and a root whose holder's liveness was gone for
 * the grace may be taken over before its lease's end: the deadline is then no later than the holder's liveness
 * allows (`Liveness.childDeadline`), so the takeover fences the child's writes as the lease's end does.
 */
export function childDeadline(ctx: StoreContext, rootId: string, deadline: string): string {
  return ctx.cluster ? (ctx.liveness?.childDeadline(rootId, deadline) ?? deadline) : deadline;
}

/** The claims half of the store: `acquire`, `renew`, `release` and `adopt`, fenced as the README says. */
export function leaseOperations(
  ctx: StoreContext,
  channel: string,
): Pick<LeaseStore, 'acquire' | 'renew' | 'release' | 'adopt'> {
  const { holdings } = ctx;
  return {
    async acquire(runId, { owner, ttlMs, reclaimOwn }) {
      positive(ttlMs);
      const reply = await runScript(ctx, 'claim a run', acquireLease, runId, [
        owner,
        String(Math.ceil(ttlMs)),
        nonce(),
        reclaimOwn === true ? '1' : '0',
        ...(ctx.liveness?.claimArgs() ?? ['', '', '']),
      ]);
      if (reply[0] === 'missing') throw new RunNotFoundError(runId);
      if (reply[0] !== 'ok') return undefined;
      const [, epoch, leaseUntil, recoveries, cancel, token, incarnation] = reply.map(String);
      ctx.liveness?.claimed(runId, Number(leaseUntil) - Math.ceil(ttlMs));
      // HMGET's false for an owner that released comes back as nil: no holder to take the run from.
      const takenFrom = typeof reply[7] === 'string' ? reply[7] : null;
      const lease: Lease = {
        runId,
        incarnation: incarnation ?? '',
        owner,
        epoch: Number(epoch),
        leaseUntil: Number(leaseUntil),
        recoveries: Number(recoveries),
        cancelRequested: cancel === '1',
        takenFrom,
      };
      holdings.set(runId, {
        incarnation: lease.incarnation,
        epoch: lease.epoch,
        token: token ?? '',
        until: lease.leaseUntil,
      });
      return lease;
    },

    async renew(lease, ttlMs) {
      positive(ttlMs);
      const held = holdings.get(lease.runId, lease.incarnation, lease.epoch);
      const deadline = Math.max(lease.leaseUntil, held?.until ?? 0);
      const reply = await runScript(ctx, 'renew a lease', renewLease, lease.runId, [
        held?.token ?? '',
        String(lease.epoch),
        lease.owner,
        String(Math.ceil(ttlMs)),
        String(deadline),
        lease.incarnation,
      ]);
      // A lost lease stays in `holdings`: the holder's later writes keep carrying its token and are refused,
      // even when lost data makes the same epoch number come round again.
      if (reply[0] !== 'ok') {
        throw reply[0] === 'late'
          ? new LeaseLostError(
              lease.runId,
              lease.epoch,
              'the renewal reached Redis after the lease ran out',
            )
          : new LeaseLostError(lease.runId, lease.epoch);
      }
      const leaseUntil = Number(reply[1]);
      holdings.renewed(lease.runId, lease.incarnation, lease.epoch, leaseUntil);
      return { ...lease, leaseUntil, cancelRequested: String(reply[2]) === '1' };
    },

    async release(lease) {
      // A child holds no lease of its own: releasing its root's is what frees it.
      if (lease.root === undefined) {
        const token = holdings.get(lease.runId, lease.incarnation, lease.epoch)?.token ?? '';
        await runScript(ctx, 'release a lease', releaseLease, lease.runId, [
          String(lease.epoch),
          lease.owner,
          token,
          channel,
          lease.incarnation,
        ]);
      }
      holdings.forget(lease.runId, lease.incarnation, lease.epoch);
    },

    async adopt(childRunId, parent) {
      const root = parent.root ?? { runId: parent.runId, incarnation: parent.incarnation };
      const rootHolding = holdings.get(root.runId, root.incarnation, parent.epoch);
      const parentHolding = holdings.get(parent.runId, parent.incarnation, parent.epoch);
      const token = parentHolding?.token ?? `${parent.epoch}:${nonce()}:${parent.owner}`;
      const until = Math.max(parent.leaseUntil, rootHolding?.until ?? 0);
      // On Cluster the child's script cannot see its root and parent: they are read just before.
      const current = ctx.cluster && (await parentLeaseCurrent(ctx, parent, root));
      const reply = await runScript(
        ctx,
        'adopt a child run',
        adoptRun,
        childRunId,
        [
          parent.runId,
          parent.incarnation,
          String(parent.epoch),
          parent.owner,
          token,
          childDeadline(ctx, root.runId, String(until)),
          root.incarnation,
          current ? '1' : '0',
        ],
        [ctx.keys.run(root.runId).run, ctx.keys.run(parent.runId).run],
      );
      if (reply[0] === 'missing') throw new RunNotFoundError(childRunId);
      if (reply[0] === 'stranger') throw notAChildError(childRunId, parent.runId);
      // A parent lease that is not current, a newer holder's adoption, or one that arrived too late.
      if (reply[0] !== 'ok') return undefined;
      const incarnation = String(reply[1]);
      holdings.set(childRunId, { incarnation, epoch: parent.epoch, token, until, root });
      return {
        runId: childRunId,
        incarnation,
        owner: parent.owner,
        epoch: parent.epoch,
        leaseUntil: parent.leaseUntil,
        root,
      };
    },
  };
}
