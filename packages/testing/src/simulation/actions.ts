import { isCairnError } from '@cairn/sdk';
import { clientCancel } from './client-cancel.js';
import type { Random } from './random.js';
import type { Schedule } from './schedule.js';

/** One decision a schedule may take, with how likely it is against the others. */
export interface Action {
  weight: number;
  name: string;
  run(): Promise<void>;
}

/** The decisions a schedule may take now, each with its weight. */
export function actions(s: Schedule): Action[] {
  const list: Action[] = [];
  const roots = [...s.fates.values()].filter((fate) => !fate.discarded).map((fate) => fate.runId);
  const available = s.processes.filter((p) => p.available);
  const add = (weight: number, name: string, run: () => Promise<void>) =>
    list.push({ weight, name, run });

  for (const process of available) {
    const idle = roots.filter((runId) => !process.attempts.has(runId));
    if (idle.length > 0 && process.attempts.size < 3) {
      add(12 / available.length, `claim by ${process.name}`, async () => {
        void s.attempt(process, s.random.pick(idle));
      });
    }
  }
  const releasable = s.releasable(true);
  if (releasable.length > 0) {
    add(40, 'release', async () => {
      const held = s.random.pick(releasable);
      s.note(`release ${held.label}${held.kind === 'write' ? ` by ${held.process}` : ''}`);
      held.release();
    });
  }
  add(5, 'tick', () => s.advance(Math.floor(s.leaseMs / 3)));
  const alive = s.processes.filter((p) => p.state === 'alive');
  const frozen = s.processes.filter((p) => p.state === 'frozen');
  if (alive.length > 0) {
    add(3, 'freeze', async () => {
      const process = s.random.pick(alive);
      process.freeze();
      s.note(`freeze ${process.name}`);
    });
    add(3, 'crash', async () => s.armCrash(s.random.pick(alive)));
    add(2, 'hand over', async () => {
      const process = s.random.pick(alive);
      process.handingOver = true;
      process.handOver.abort();
      s.note(`hand over ${process.name}`);
    });
  }
  const connected = alive.filter((p) => !p.partitioned);
  const cutOff = alive.filter((p) => p.partitioned);
  if (connected.length > 0) {
    add(2, 'cut off', async () => {
      const process = s.random.pick(connected);
      process.partitioned = true;
      process.wasCutOff = true;
      s.note(`${process.name} cannot reach the store`);
    });
  }
  if (cutOff.length > 0) {
    add(4, 'reconnect', async () => {
      const process = s.random.pick(cutOff);
      process.partitioned = false;
      s.note(`${process.name} reaches the store again`);
    });
  }
  if (frozen.length > 0) {
    add(4, 'thaw', async () => {
      const process = s.random.pick(frozen);
      process.thaw();
      s.note(`thaw ${process.name}`);
    });
    add(3, 'expire', () => s.expire());
  }
  if (available.length < 3) add(3, 'spawn', async () => void (await s.spawn()));
  if (roots.length > 0) {
    add(1, 'cancel', async () => {
      const runId = s.random.pick(roots);
      s.fates.get(runId)!.cancelRequested = true;
      s.note(`client cancels ${runId}: ${await clientCancel(s, runId)}`);
    });
    add(1, 'discard', async () => {
      const runId = s.random.pick(roots);
      const outcome = await s.client.store.delete(runId).then(
        (deleted) => (deleted ? 'deleted' : 'missing'),
        (error: unknown) => (isCairnError(error) ? error.code : String(error)),
      );
      if (outcome === 'deleted') s.fates.get(runId)!.discarded = true;
      s.note(`client discards ${runId}: ${outcome}`);
    });
    add(1, 'start again', async () => {
      const fate = s.fates.get(s.random.pick(roots))!;
      await s.createRun(fate.runId, fate.kind);
    });
  }
  const discarded = [...s.fates.values()].filter((fate) => fate.discarded);
  if (discarded.length > 0) {
    add(2, 'restart', async () => {
      const fate = s.random.pick(discarded);
      s.world.nextGeneration(fate.runId);
      Object.assign(fate, { discarded: false, disrupted: false, cancelRequested: false });
      await s.createRun(fate.runId, fate.kind);
    });
  }
  const children = [...s.ledger.children];
  if (children.length > 0 && available.length > 0) {
    add(2, 'steal a child', async () => {
      const process = s.random.pick(available);
      const child = s.random.pick(children);
      const lease = await process.store
        .acquire(child, { owner: process.owner, ttlMs: s.leaseMs })
        .catch(() => undefined);
      if (lease !== undefined) await process.store.release(lease).catch(() => undefined);
      const listed = await process.store
        .claimable({ limit: 50, definitions: [{ kind: 'agent', name: 'concierge' }] })
        .catch(() => []);
      if (listed.length > 0) s.ledger.violation(`claimable listed child runs ${listed.join(', ')}`);
      s.note(`${process.name} tries to claim child ${child}`);
    });
  }
  const loseLock = s.space.loseLockSession;
  if (loseLock !== undefined && alive.length > 0) {
    add(2, 'lose a lock session', async () => {
      const process = s.random.pick(alive);
      s.disrupt(process);
      await loseLock.call(s.space, process.inner, process.name);
      s.note(`lock session of ${process.name} lost`);
    });
  }
  return list;
}

export function pickWeighted(random: Random, list: readonly Action[]): Action {
  const total = list.reduce((sum, action) => sum + action.weight, 0);
  let at = random.next() * total;
  for (const action of list) {
    at -= action.weight;
    if (at < 0) return action;
  }
  return list.at(-1)!;
}
