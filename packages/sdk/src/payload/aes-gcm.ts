import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';
import { CairnError } from '../errors.js';
import { PayloadUnreadableError, type PayloadCodec } from './codec.js';

/** Options of `aesGcmCodec`. */
export interface AesGcmOptions {
  /**
   * The keys, by id: 32 bytes each (AES-256), as bytes or base64. Every key that encrypted a stored payload
   * must stay here for that payload to be read; a key removed makes its payloads unreadable (`key-missing`).
   */
  keys: Readonly<Record<string, Uint8Array | string>>;
  /** The id of the key new payloads are encrypted with. */
  current: string;
}

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
    if (!keyIdPattern.test(id)) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `An AES-GCM key id must be 1 to 64 letters, digits, "_", "." or "-", not ${JSON.stringify(id)}.`,
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
  return {
    name: 'aes-gcm',
    encode(data, context) {
      const iv = nextIv();
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(context.binding);
      const body = Buffer.concat([iv, cipher.update(data), cipher.final(), cipher.getAuthTag()]);
      return { data: body, keyId: options.current };
    },
    decode(data, context) {
      const key = context.keyId === undefined ? undefined : keys.get(context.keyId);
      if (key === undefined) {
        throw new PayloadUnreadableError(
          context,
          'key-missing',
          `its key "${context.keyId ?? ''}" is not among the AES-GCM keys given`,
        );
      }
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
