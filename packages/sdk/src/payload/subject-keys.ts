import { createHash, randomBytes } from 'node:crypto';
import { brand, CairnError } from '../errors.js';

/** A subject's data key: its id (stored beside each payload it encrypted) and its 32 bytes. */
export interface SubjectKey {
  id: string;
  key: Uint8Array;
}

/**
 * Where per-subject data keys live (`aesGcmCodec({ subjects })`): one key per subject (a user, a tenant), made on
 * first use, deleted by `forget`. Deleting a subject's key makes every copy of its payloads unreadable, the
 * database's backups included, as long as the keys themselves are kept out of those backups: a key service
 * (KMS, Vault) behind this interface does that; `memoryKeyring` is for tests and single processes.
 */
export interface SubjectKeyring {
  /**
   * The key new payloads of `subject` are encrypted with, made on first use. Throws `SubjectForgottenError`
   * once the subject was forgotten: a run still writing for it stops there.
   */
  current(subject: string): Promise<SubjectKey>;
  /** The key with this id, or undefined once its subject was forgotten (or when it never existed). */
  key(id: string): Promise<Uint8Array | undefined>;
  /**
   * Deletes the subject's keys, and keeps only that it was forgotten (as a hash): `current` refuses it after.
   * `current` and `forget` must be atomic with each other across every process sharing the keyring: a `current`
   * racing a `forget` either answers the key before it is deleted or refuses, and never makes it exist again.
   */
  forget(subject: string): Promise<void>;
}

/** A write for a subject whose keys were deleted (`forget`): nothing more is written for it. Never retried. */
export class SubjectForgottenError extends CairnError {
  constructor() {
    super('SUBJECT_FORGOTTEN', 'This run’s subject was forgotten: nothing more is written for it.');
    this.name = 'SubjectForgottenError';
  }
}
brand(SubjectForgottenError, 'SubjectForgottenError');

/**
 * What a keyring keeps of a forgotten subject, and looks a subject's key up by: the SHA-256 of its id, in hex. One
 * definition, so every keyring keeps the same and none keeps the id itself.
 */
export function subjectHash(subject: string): string {
  return createHash('sha256').update(subject, 'utf8').digest('hex');
}

/**
 * Per-subject keys in this process's memory: lost when it exits (and with them every payload they encrypted).
 * For tests, and for one process whose runs need not outlive it.
 */
export function memoryKeyring(): SubjectKeyring {
  const bySubject = new Map<string, SubjectKey>();
  const byId = new Map<string, Uint8Array>();
  const forgotten = new Set<string>();
  return {
    async current(subject) {
      if (forgotten.has(subjectHash(subject))) throw new SubjectForgottenError();
      let known = bySubject.get(subject);
      if (known === undefined) {
        // A random id, not one derived from the subject: a stored payload does not say whose it is.
        known = { id: randomBytes(12).toString('hex'), key: randomBytes(32) };
        bySubject.set(subject, known);
        byId.set(known.id, known.key);
      }
      return known;
    },
    async key(id) {
      return byId.get(id);
    },
    async forget(subject) {
      forgotten.add(subjectHash(subject));
      const known = bySubject.get(subject);
      bySubject.delete(subject);
      if (known !== undefined) {
        byId.delete(known.id);
        known.key.fill(0);
      }
    },
  };
}
