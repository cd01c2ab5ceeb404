import { randomBytes } from 'node:crypto';
import { CairnError, SubjectForgottenError, subjectHash, type SubjectKeyring } from '@cairn/sdk';
import { Gate, type RedisClient } from './client.js';
import { keyringCurrent } from './lua/keyring-current.js';
import { keyringForget } from './lua/keyring-forget.js';

/** Options of `redisKeyring`. */
export interface RedisKeyringOptions {
  /** An ioredis `Redis` or `Cluster`, owned by the caller: keep it apart from the runs' Redis (see below). */
  client: RedisClient;
  /** The keys' prefix; every key is under one hash tag, `{<prefix>:keyring}`. @defaultValue 'cairn' */
  prefix?: string;
  /** How long a call may take before it fails with `STORE_UNAVAILABLE`. @defaultValue 10000 */
  timeoutMs?: number;
}

/**
 * Per-subject data keys (`aesGcmCodec({ subjects })`) in Redis, shared by every process given the same client
 * and prefix: a key is made once per subject, on first use, and `forget` deletes it for all of them (what it
 * keeps of a forgotten subject is a SHA-256 of its id). Making a key and forgetting are each one script, so they
 * are atomic with each other: no key is made again for a subject being forgotten.
 *
 * Forgetting makes a subject's payloads unreadable wherever the keys are not: keep this Redis apart from the one
 * (or the Postgres) the runs are in, and out of their backups, or a backup of both still reads what was
 * forgotten. Each call is a round trip: every payload encoded for a subject asks for its key.
 */
export function redisKeyring(options: RedisKeyringOptions): SubjectKeyring {
  const prefix = options.prefix ?? 'cairn';
  const gate = new Gate(options.client, prefix, options.timeoutMs ?? 10_000);
  const tag = `{${prefix}:keyring}`;
  const keys = [`${tag}:ids`, `${tag}:keys`, `${tag}:forgotten`];
  /** A stored key's bytes; a missing or malformed one means the hashes were changed outside the keyring. */
  const checkedKey = (stored: string | undefined, id: string): Buffer => {
    const key = typeof stored === 'string' ? Buffer.from(stored, 'base64') : undefined;
    if (key?.length === 32) return key;
    throw new CairnError(
      'STORE_FAILED',
      `The keyring under "${prefix}" names key "${id}" but holds no 32-byte key for it: its keys were changed outside the keyring.`,
      { data: { operation: 'read a subject key', prefix, keyId: id } },
    );
  };
  return {
    async current(subject) {
      const found = (await gate.script('read a subject key', keyringCurrent, keys, [
        subjectHash(subject),
        randomBytes(12).toString('hex'),
        randomBytes(32).toString('base64'),
      ])) as [string, string | undefined] | null;
      if (found === null) throw new SubjectForgottenError();
      const [id, key] = found;
      return { id, key: checkedKey(key, id) };
    },
    async key(id) {
      const key = await gate.call('read a subject key', (client) => client.hget(keys[1]!, id));
      return key === null ? undefined : checkedKey(key, id);
    },
    async forget(subject) {
      await gate.script('forget a subject', keyringForget, keys, [subjectHash(subject)]);
    },
  };
}
