import { CairnError } from '../errors.js';
import { decodeBase85, encodeBase85 } from './base85.js';
import type { JsonValue } from '../json.js';
import {
  payloadContext,
  PayloadUnreadableError,
  type PayloadCodec,
  type PayloadContext,
  type PayloadKind,
} from './codec.js';

/** What every encoded payload begins with: `cairn:1:<steps>:<base85>`, steps as `name` or `name@keyId`. */
export const sealedPrefix = 'cairn:1:';

const namePattern = /^[a-z0-9-]{1,40}$/;
const stepPattern = /^([a-z0-9-]{1,40})(?:@([A-Za-z0-9_.-]{1,64}))?$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** True for a value stored encoded: a string in the encoded payloads' format. */
export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(sealedPrefix);
}

/**
 * What an encoded payload begins with up to its data, `cairn:1:<steps>:`: which codecs and keys wrote it. Two
 * payloads with the same header were encoded the same way.
 */
export function sealedHeader(sealed: string): string {
  return sealed.slice(0, sealed.indexOf(':', sealedPrefix.length) + 1);
}

/** Options of a `PayloadSealer` (and of `protectPayloads`). */
export interface SealerOptions {
  /** The steps new payloads go through, in order: `[deflateCodec(), aesGcmCodec(...)]`. */
  codec: PayloadCodec | readonly PayloadCodec[];
  /**
   * Further codecs stored payloads may name, to read them only: one taken out of `codec` (a compression
   * given up, an old key service) while rows it wrote are still stored.
   */
  decodeWith?: readonly PayloadCodec[];
}

/**
 * Turns JSON payloads into encoded strings and back, through a chain of codecs. Each string records the steps
 * it went through and their key ids, so a change of codec or key leaves old payloads readable.
 */
export class PayloadSealer {
  private readonly steps: readonly PayloadCodec[];
  private readonly byName = new Map<string, PayloadCodec>();

  constructor(options: SealerOptions) {
    this.steps = Array.isArray(options.codec)
      ? (options.codec as readonly PayloadCodec[])
      : [options.codec as PayloadCodec];
    if (this.steps.length === 0) {
      throw new CairnError('INVALID_ARGUMENT', 'A payload codec needs at least one step.');
    }
    for (const codec of [...(options.decodeWith ?? []), ...this.steps]) {
      if (!namePattern.test(codec.name)) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `A codec's name must be 1 to 40 lowercase letters, digits or "-", not ${JSON.stringify(codec.name)}.`,
        );
      }
      this.byName.set(codec.name, codec);
    }
  }

  /** Whose data a run holds, when known: what a codec with per-subject keys encrypts its payloads for. */
  subjectOf: (runId: string) => string | undefined = () => undefined;

  /** The context of a place, for `seal` and `open`. */
  context(runId: string, incarnation: string, kind: PayloadKind, position = ''): PayloadContext {
    return payloadContext(runId, incarnation, kind, position, this.subjectOf(runId));
  }

  /** Deletes the subject's keys in every codec of the chain that has per-subject keys; false when none has. */
  async forget(subject: string): Promise<boolean> {
    const shredders = [...this.byName.values()].filter((codec) => codec.forget !== undefined);
    for (const codec of shredders) await codec.forget!(subject);
    return shredders.length > 0;
  }

  /** Encodes a JSON value for `context`'s place. */
  async seal(value: JsonValue, context: PayloadContext): Promise<string> {
    let data: Uint8Array = encoder.encode(JSON.stringify(value));
    const names: string[] = [];
    for (const codec of this.steps) {
      const encoded = await codec.encode(data, context);
      data = encoded.data;
      names.push(encoded.keyId === undefined ? codec.name : `${codec.name}@${encoded.keyId}`);
    }
    return `${sealedPrefix}${names.join('+')}:${encodeBase85(data)}`;
  }

  /**
   * Decodes what `seal` wrote for the same place. Anything else is `PayloadUnreadableError`: plaintext
   * (`not-encoded`), a string not in the format (`malformed`), a codec or key not at hand, or a payload a codec
   * refused (changed, or written for another place).
   */
  async open(stored: unknown, context: PayloadContext): Promise<JsonValue> {
    if (!isSealed(stored)) {
      throw new PayloadUnreadableError(
        context,
        'not-encoded',
        'it is stored in plaintext where a codec is set (written without the codec, or replaced)',
      );
    }
    const rest = stored.slice(sealedPrefix.length);
    const colon = rest.indexOf(':');
    const steps = colon < 0 ? [] : rest.slice(0, colon).split('+');
    const parsed = steps.map((step) => stepPattern.exec(step));
    if (colon < 0 || parsed.some((match) => match === null)) {
      throw new PayloadUnreadableError(context, 'malformed', 'it is not an encoded payload');
    }
    const bytes = decodeBase85(rest.slice(colon + 1));
    if (bytes === undefined) {
      throw new PayloadUnreadableError(context, 'malformed', 'its data is not base-85 text');
    }
    let data: Uint8Array = bytes;
    for (const match of parsed.reverse()) {
      const [, name, keyId] = match!;
      const codec = this.byName.get(name!);
      if (codec === undefined) {
        throw new PayloadUnreadableError(
          context,
          'unknown-codec',
          `it was encoded with "${name}", which is not among the codecs given`,
        );
      }
      try {
        data = await codec.decode(data, keyId === undefined ? context : { ...context, keyId });
      } catch (error) {
        if (error instanceof PayloadUnreadableError) throw error;
        throw new PayloadUnreadableError(context, 'rejected', `codec "${name}" refused it`, error);
      }
    }
    try {
      return JSON.parse(decoder.decode(data)) as JsonValue;
    } catch (error) {
      throw new PayloadUnreadableError(context, 'malformed', 'it does not decode to JSON', error);
    }
  }
}
