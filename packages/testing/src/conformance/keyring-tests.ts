import { SubjectForgottenError, type SubjectKey, type SubjectKeyring } from '@cairn/sdk';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * One isolated set of per-subject keys for one test. Every `keyring()` call is a process sharing those keys (a
 * worker, a client); a keyring kept in one process's memory may hand back the same instance each time.
 */
export interface KeyringHarness {
  keyring(): SubjectKeyring | Promise<SubjectKeyring>;
  /** Frees what the harness opened and deletes its keys; called after each test. */
  close?(): Promise<void>;
}

/** Creates a fresh, isolated harness for each test. */
export type KeyringHarnessFactory = () => KeyringHarness | Promise<KeyringHarness>;

const sameKey = (a: SubjectKey, b: SubjectKey) =>
  a.id === b.id && Buffer.from(a.key).equals(Buffer.from(b.key));

/**
 * What every `SubjectKeyring` must do (`aesGcmCodec({ subjects })`): one key per subject, the same for every
 * process sharing the keyring; `forget` deletes it for all of them, and no `current` racing a `forget` makes it
 * exist again. Run it against a keyring of your own (a KMS, Vault) as the built-in ones are.
 */
export function describeKeyringConformance(name: string, factory: KeyringHarnessFactory): void {
  describe(`${name}: subject keyring conformance`, () => {
    let harness: KeyringHarness | undefined;
    const open = async () => {
      harness = await factory();
      return harness;
    };
    afterEach(async () => {
      await harness?.close?.();
      harness = undefined;
    });

    it('makes one 32-byte key per subject on first use, the same for every process', async () => {
      const h = await open();
      const [a, b] = [await h.keyring(), await h.keyring()];
      const first = await a.current('user-1');
      expect(first.key).toHaveLength(32);
      expect(first.id.length).toBeGreaterThan(0);
      expect(sameKey(await a.current('user-1'), first)).toBe(true);
      expect(sameKey(await b.current('user-1'), first)).toBe(true);
      expect(Buffer.from((await b.key(first.id))!).equals(Buffer.from(first.key))).toBe(true);
      const other = await b.current('user-2');
      expect(other.id).not.toBe(first.id);
      expect(Buffer.from(other.key).equals(Buffer.from(first.key))).toBe(false);
      // The id does not say whose key it is.
      expect(first.id).not.toContain('user-1');
    });

    it('gives every process racing for a new subject the same key', async () => {
      const h = await open();
      const keyrings = await Promise.all(Array.from({ length: 4 }, () => h.keyring()));
      const keys = await Promise.all(
        Array.from({ length: 40 }, (_, i) => keyrings[i % keyrings.length]!.current('racing')),
      );
      for (const key of keys) expect(sameKey(key, keys[0]!)).toBe(true);
    });

    it('answers no key for an id it never made', async () => {
      const h = await open();
      const keyring = await h.keyring();
      expect(await keyring.key('no-such-id')).toBeUndefined();
    });

    it('forgets a subject for every process: no key by its id, and no new one made', async () => {
      const h = await open();
      const [a, b] = [await h.keyring(), await h.keyring()];
      const forgotten = await a.current('user-1');
      const kept = await a.current('user-2');
      await b.forget('user-1');
      expect(await a.key(forgotten.id)).toBeUndefined();
      expect(await b.key(forgotten.id)).toBeUndefined();
      await expect(a.current('user-1')).rejects.toBeInstanceOf(SubjectForgottenError);
      await expect(b.current('user-1')).rejects.toMatchObject({ code: 'SUBJECT_FORGOTTEN' });
      // Every other subject is as it was.
      expect(sameKey(await b.current('user-2'), kept)).toBe(true);
      expect(Buffer.from((await b.key(kept.id))!).equals(Buffer.from(kept.key))).toBe(true);
      // Forgetting again, or a subject never seen, is no error; the latter is refused from then on.
      await a.forget('user-1');
      await a.forget('never-seen');
      await expect(b.current('never-seen')).rejects.toBeInstanceOf(SubjectForgottenError);
    });

    it('never makes a key exist again for a subject forgotten while processes asked for it', async () => {
      const h = await open();
      const keyrings = await Promise.all(Array.from({ length: 4 }, () => h.keyring()));
      for (let round = 0; round < 5; round += 1) {
        const subject = `raced-${round}`;
        const handed: SubjectKey[] = [];
        const asking = Array.from({ length: 30 }, async (_, i) => {
          try {
            handed.push(await keyrings[i % keyrings.length]!.current(subject));
          } catch (error) {
            if (!(error instanceof SubjectForgottenError)) throw error;
          }
        });
        const forgetting = keyrings[round % keyrings.length]!.forget(subject);
        await Promise.all([...asking, forgetting]);
        // Whatever was handed out before the forget is gone; nothing after it was handed out.
        for (const key of handed) {
          for (const keyring of keyrings) expect(await keyring.key(key.id)).toBeUndefined();
        }
        for (const keyring of keyrings) {
          await expect(keyring.current(subject)).rejects.toBeInstanceOf(SubjectForgottenError);
        }
      }
    });
  });
}
