import { claimableStatuses, type RunStatus } from '@cairn/sdk';
import type { Redis } from 'ioredis';
// Test helpers that reach into the key layout: where a run's index entries are is what they check.
import { allStatuses, bucketCount, bucketOf, type KeySpace } from '../src/keys.js';

/** Where a run is indexed, over every bucket. */
export interface Placement {
  /** `bucket:status` of every status index holding the run. */
  statuses: string[];
  /** `bucket:score` of every claimable set holding the run. */
  claimable: string[];
}

/** Where `runId` is indexed, looked up in every index of every bucket. */
export async function placement(admin: Redis, keys: KeySpace, runId: string): Promise<Placement> {
  const lookups: { bucket: number; status?: string; score: Promise<string | null> }[] = [];
  for (let bucket = 0; bucket < bucketCount; bucket += 1) {
    for (const status of allStatuses)
      lookups.push({ bucket, status, score: admin.zscore(keys.index(bucket, status), runId) });
    lookups.push({ bucket, score: admin.zscore(keys.claimable(bucket), runId) });
  }
  const found: Placement = { statuses: [], claimable: [] };
  for (const { bucket, status, score } of lookups) {
    const value = await score;
    if (value === null) continue;
    if (status === undefined) found.claimable.push(`${bucket}:${Number(value)}`);
    else found.statuses.push(`${bucket}:${status}`);
  }
  return found;
}

/** Every run hash under the prefix, with its run id, found with SCAN (a test may). */
async function* runHashes(admin: Redis, keys: KeySpace): AsyncGenerator<[string, string]> {
  let cursor = '0';
  do {
    const [next, found] = await admin.scan(
      cursor,
      'MATCH',
      `${keys.prefix}:{b*}:run:*`,
      'COUNT',
      500,
    );
    cursor = next;
    for (const key of found) yield [key, key.slice(key.indexOf('}:run:') + '}:run:'.length)];
  } while (cursor !== '0');
}

// Reads a run's hash and its entry in each index of its bucket at one instant, so a write landing meanwhile
// cannot make them disagree.
const readEntries = `
local h = redis.call('HMGET', KEYS[1], 'status', 'order', 'rootId', 'owner', 'leaseUntil', 'cancel', 'wake',
  'waitUntil')
local scores = {}
for i = 2, #KEYS do scores[i - 1] = redis.call('ZSCORE', KEYS[i], ARGV[1]) or '' end
return {h[1] or '', h[2] or '', h[3] or '', h[4] or '', h[5] or '', h[6] or '', h[7] or '', h[8] or '', scores}
`;

/**
 * What is wrong in the indexes under `keys.prefix`: a run not in exactly its status's index of its bucket
 * (scored by its creation order), a claimable entry missing, extra or scored otherwise than its lease's end
 * while held and its creation order while free (a waiting run has one only once a cancel was asked or a signal
 * it waits for came), a waits entry missing, extra or scored otherwise than the wait's time, or an entry no run
 * owns. Finds runs with SCAN (a test may).
 */
export async function indexMismatches(admin: Redis, keys: KeySpace): Promise<string[]> {
  const problems: string[] = [];
  let expectedEntries = 0;
  for await (const [key, runId] of runHashes(admin, keys)) {
    const bucket = bucketOf(runId);
    const indexes = keys.bucketIndexes(bucket);
    const reply = (await admin.eval(readEntries, 1 + indexes.length, key, ...indexes, runId)) as [
      ...string[],
      string[],
    ];
    const [status, order, rootId, owner, leaseUntil, cancel, wake, waitUntil] = reply as string[];
    const scores = reply[8] as string[];
    if (status === '') continue;
    const waiting = rootId === '' && status === 'waiting';
    const claimable =
      rootId === '' &&
      (claimableStatuses.includes(status as RunStatus) ||
        (waiting && (cancel === '1' || wake === '1')));
    const timed = waiting && waitUntil !== '';
    expectedEntries += 1 + (claimable ? 1 : 0) + (timed ? 1 : 0);
    const wanted = allStatuses.map((each) => (each === status ? Number(order) : null));
    const due = owner !== '' && leaseUntil !== '' ? Number(leaseUntil) * 1000 : Number(order);
    wanted.push(claimable ? due : null);
    wanted.push(timed ? Number(waitUntil) : null);
    const got = scores.map((score) => (score === '' ? null : Number(score)));
    if (JSON.stringify(got) !== JSON.stringify(wanted))
      problems.push(
        `run ${JSON.stringify(runId)} (${status}) is indexed ${JSON.stringify(got)}, not ${JSON.stringify(wanted)}`,
      );
  }
  let entries = 0;
  for (let bucket = 0; bucket < bucketCount; bucket += 1)
    for (const key of keys.bucketIndexes(bucket)) entries += await admin.zcard(key);
  if (entries !== expectedEntries)
    problems.push(`the indexes hold ${entries} entries, the runs ${expectedEntries}`);
  return problems;
}

/**
 * What is wrong in the liveness sets under `keys.prefix`: a run whose hash names a `holder` without an owner, or
 * missing from its bucket's `held` set under it; a `held` entry whose run does not name that holder or has no
 * owner; an instance holding runs of a bucket missing from its `live` set, or one in it that holds none there.
 */
export async function livenessMismatches(admin: Redis, keys: KeySpace): Promise<string[]> {
  const problems: string[] = [];
  for (let bucket = 0; bucket < bucketCount; bucket += 1) {
    const live = new Set(await admin.zrange(keys.live(bucket), '0', '-1'));
    const holding = new Set<string>();
    for (const entry of await admin.zrange(keys.held(bucket), '0', '-1')) {
      const [instance = '', runId = ''] = entry.split('\0');
      holding.add(instance);
      const [holder, owner] = await admin.hmget(keys.run(runId).run, 'holder', 'owner');
      if (holder !== instance || owner === null)
        problems.push(
          `run ${JSON.stringify(runId)} is held by ${instance} in bucket ${bucket}, its hash says ${holder} (owner ${owner})`,
        );
      if (!live.has(instance))
        problems.push(`${instance} holds runs of bucket ${bucket} with no liveness there`);
    }
    for (const instance of live)
      if (!holding.has(instance))
        problems.push(`${instance} keeps a liveness in bucket ${bucket} and holds nothing there`);
  }
  for await (const [key, runId] of runHashes(admin, keys)) {
    const [holder, owner] = await admin.hmget(key, 'holder', 'owner');
    if (holder === null) continue;
    if (owner === null)
      problems.push(`run ${JSON.stringify(runId)} names holder ${holder} with no owner`);
    if ((await admin.zscore(keys.held(bucketOf(runId)), `${holder}\0${runId}`)) === null)
      problems.push(
        `run ${JSON.stringify(runId)} names holder ${holder}, not in its bucket's held set`,
      );
  }
  return problems;
}
