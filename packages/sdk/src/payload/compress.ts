import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { PayloadUnreadableError, type PayloadCodec } from './codec.js';

/** The first byte of what `deflateCodec` writes: how the rest is stored. */
const stored = 0;
const deflated = 1;
/** Below this, deflate's own framing costs more than it saves: the payload is kept as it is. */
const minDeflateBytes = 128;

/**
 * Deflate (raw, level 6 by default, a 4 KB window: payloads are a message, a tool result). Put it before an
 * encrypting codec: ciphertext does not compress. A payload deflate does not shrink is kept as it is, marked so.
 * It compresses on the calling thread: a thread-pool hop costs more than the work at these sizes.
 */
export function deflateCodec(options: { level?: number } = {}): PayloadCodec {
  const level = options.level ?? 6;
  return {
    name: 'deflate',
    encode(data) {
      if (data.length >= minDeflateBytes) {
        const packed = deflateRawSync(data, { level, windowBits: 12, memLevel: 6 });
        if (packed.length < data.length) return { data: framed(deflated, packed) };
      }
      return { data: framed(stored, data) };
    },
    decode(data, context) {
      const body = data.subarray(1);
      if (data[0] === stored) return body;
      if (data[0] !== deflated)
        throw new PayloadUnreadableError(context, 'malformed', 'it is not a deflate payload');
      try {
        return inflateRawSync(body, { maxOutputLength: 256 * 1024 * 1024 });
      } catch (error) {
        throw new PayloadUnreadableError(context, 'rejected', 'it does not inflate', error);
      }
    },
  };
}

function framed(mode: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(body.length + 1);
  out[0] = mode;
  out.set(body, 1);
  return out;
}
