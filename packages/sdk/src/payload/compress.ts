import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { PayloadUnreadableError, type PayloadCodec } from './codec.js';

/**
 * Deflate (raw, level 6 by default). Put it before an encrypting codec: ciphertext does not compress. Payloads
 * are small (a message, a tool result), so this compresses on the calling thread: a thread-pool hop costs more
 * than the work.
 */
export function deflateCodec(options: { level?: number } = {}): PayloadCodec {
  const level = options.level ?? 6;
  return {
    name: 'deflate',
    encode: (data) => ({ data: deflateRawSync(data, { level }) }),
    decode(data, context) {
      try {
        return inflateRawSync(data, { maxOutputLength: 256 * 1024 * 1024 });
      } catch (error) {
        throw new PayloadUnreadableError(context, 'rejected', 'it does not inflate', error);
      }
    },
  };
}
