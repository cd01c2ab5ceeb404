import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';
import { CairnError } from '../errors.js';
import { PayloadUnreadableError, type PayloadCodec, type PayloadContext } from './codec.js';
import type { SubjectKeyring } from './subject-keys.js';

/** Options of `aesGcmCodec`. */
export interface AesGcmOptions {
  /**
   * The keys, by id: 32 bytes each (AES-256), as bytes or base64. Every key that encrypted a stored payload
   * must stay here for that payload to be read; a key removed makes its payloads unreadable (`key-missing`).
   */
  keys: Readonly<Record<string, Uint8Array | string>>;
  /** The id of the key new payloads are encrypted with. */
  current: string;
  /**
   * Per-subject keys: a run given a subject (`NewRun.subject`) has its payloads encrypted under that subject's
   * own key (stored as key id `s.<id>`), so `forget({ subject })` can delete the key and make them unreadable
   * everywhere. Runs without a subject use `keys`.
   */
  subjects?: SubjectKeyring;
}

/** How a payload encrypted under a subject's key names it: `s.<the keyring's id>`. */
const subjectKeyPrefix = 's.';

const ivBytes = 12;
const tagBytes = 16;
const keyIdPattern = /^[A-Za-z0-9_.-]{1,64}$/;

// IVs are taken from a pool of random bytes, refilled when used up: one call to the system's generator per 340
// payloads instead of one each. Each IV is used once: the pool moves on, and a cipher copies the IV it is given.
const ivPool = Buffer.alloc(ivBytes * 340);
let ivAt = ivPool.length;
function nextIv(): Buffer {
  if (ivAt === ivPool.length) {
    randomFillSync(ivPool);
    ivAt = 0;
  }
  const iv = ivPool.subarray(ivAt, ivAt + ivBytes);
  ivAt += ivBytes;
  return iv;
}

/**
 * AES-256-GCM: each payload gets a random 96-bit IV and is bound to its place (the run, its incarnation, what
 * it is and its position) as associated data, so a ciphertext copied elsewhere fails its tag and is refused.
 * Stored as IV, ciphertext, tag; the key id is stored beside it, so keys can be added and rotated.
 */
export function aesGcmCodec(options: AesGcmOptions): PayloadCodec {
  const keys = new Map<string, Buffer>();
  for (const [id, key] of Object.entries(options.keys)) {
    if (!keyIdPattern.test(id) || id.startsWith(subjectKeyPrefix)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `An AES-GCM key id must be 1 to 64 letters, digits, "_", "." or "-", not starting with "s." (a subject's key), not ${JSON.stringify(id)}.`,
      );
    }
    const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : Buffer.from(key);
    if (bytes.length !== 32) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `AES-GCM key "${id}" is ${bytes.length} bytes; AES-256 needs 32 (base64 of 32 random bytes).`,
      );
    }
    keys.set(id, bytes);
  }
  const current = keys.get(options.current);
  if (current === undefined) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `The current AES-GCM key "${options.current}" is not among the keys given.`,
    );
  }
  const encrypt = (data: Uint8Array, key: Uint8Array, binding: Uint8Array) => {
    const iv = nextIv();
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(binding);
    return Buffer.concat([iv, cipher.update(data), cipher.final(), cipher.getAuthTag()]);
  };
  const { subjects } = options;
  const keyOf = async (keyId: string | undefined, context: PayloadContext) => {
    if (subjects !== undefined && keyId?.startsWith(subjectKeyPrefix) === true) {
      const key = await subjects.key(keyId.slice(subjectKeyPrefix.length));
      if (key === undefined) {
        throw new PayloadUnreadableError(
          context,
          'key-missing',
          'its subject’s key is gone: the subject was forgotten',
        );
      }
      return key;
    }
    const key = keyId === undefined ? undefined : keys.get(keyId);
    if (key === undefined) {
      throw new PayloadUnreadableError(
        context,
        'key-missing',
        `its key "${keyId ?? ''}" is not among the AES-GCM keys given`,
      );
    }
    return key;
  };
  return {
    name: 'aes-gcm',
    encode(data, context) {
      if (subjects === undefined || context.subject === undefined)
        return { data: encrypt(data, current, context.binding), keyId: options.current };
      return subjects.current(context.subject).then((subjectKey) => ({
        data: encrypt(data, subjectKey.key, context.binding),
        keyId: `${subjectKeyPrefix}${subjectKey.id}`,
      }));
    },
    ...(subjects === undefined ? {} : { forget: (subject: string) => subjects.forget(subject) }),
    async decode(data, context) {
      const key = await keyOf(context.keyId, context);
      if (data.length < ivBytes + tagBytes) {
        throw new PayloadUnreadableError(context, 'rejected', 'its ciphertext is cut short');
      }
      const iv = data.subarray(0, ivBytes);
      const tag = data.subarray(data.length - tagBytes);
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(context.binding);
      decipher.setAuthTag(tag);
      try {
        return Buffer.concat([
          decipher.update(data.subarray(ivBytes, data.length - tagBytes)),
          decipher.final(),
        ]);
      } catch (error) {
        throw new PayloadUnreadableError(
          context,
          'rejected',
          'its ciphertext fails its check: changed, or copied from another run or place',
          error,
        );
      }
    },
  };
}
