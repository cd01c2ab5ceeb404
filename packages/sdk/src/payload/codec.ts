import { brand, CairnError } from '../errors.js';

/**
 * What a stored payload is to the run it belongs to. A codec that encrypts binds its ciphertext to all of it
 * (`PayloadContext.binding`), so a payload copied onto another run, another incarnation of the same id,
 * another kind of field or another position does not decode.
 */
export type PayloadKind =
  'snapshot' | 'snapshot-item' | 'output' | 'error' | 'journal' | 'signal' | 'wait' | 'stream';

/** Where a payload is stored; see `PayloadKind`. */
export interface PayloadContext {
  runId: string;
  /**
   * The run's incarnation, or '' where none is known yet (what `create` writes: the store assigns the
   * incarnation) or none is named (a signal: a client sends it to a run id).
   */
  incarnation: string;
  kind: PayloadKind;
  /** The payload's place among its kind: a journal entry's effect and seq, a stream chunk's position, ... */
  position: string;
  /** The bytes a codec that authenticates binds its output to: all of the above, unambiguously joined. */
  binding: Uint8Array;
  /** Whose data the run holds (`NewRun.subject`), for a codec with per-subject keys; not bound. */
  subject?: string;
}

/** What a codec's `encode` answers: the bytes, and the key it used, if any (stored with the payload). */
export interface EncodedPayload {
  data: Uint8Array;
  keyId?: string;
}

/**
 * One step of turning a payload into what is stored: compression, encryption, or the user's own (a KMS
 * envelope, say). Asynchronous where it needs to be (WebCrypto, a key service); a step may answer at once.
 * Each stored payload records the steps it went through, by `name`, and each step's key id, so a store can
 * hold rows of several codecs and keys at once: changing either never breaks an old row.
 */
export interface PayloadCodec {
  /** What the stored payload names this step by: lowercase letters, digits and `-`. */
  readonly name: string;
  encode(data: Uint8Array, context: PayloadContext): EncodedPayload | Promise<EncodedPayload>;
  /**
   * Reverses `encode`. `keyId` is what `encode` answered. A payload that fails its check (changed, or bound to
   * another place) must throw: a codec never answers bytes it cannot vouch for.
   */
  decode(
    data: Uint8Array,
    context: PayloadContext & { keyId?: string },
  ): Uint8Array | Promise<Uint8Array>;
  /**
   * A codec with per-subject keys deletes the subject's keys (`forget({ subject })`): its payloads can never be
   * decoded again, wherever they are copied.
   */
  forget?(subject: string): Promise<void>;
}

/** Why a payload could not be read: `PayloadUnreadableError.reason`. */
export type PayloadUnreadableReason =
  'not-encoded' | 'malformed' | 'unknown-codec' | 'key-missing' | 'rejected';

/**
 * A stored payload that cannot be read with the codecs at hand: plaintext where a codec is set (`not-encoded`),
 * not a payload this format knows (`malformed`), a codec that is not configured (`unknown-codec`), a key
 * that is gone (`key-missing`: deleted by `forget`, or not given), or a payload its codec refused
 * (`rejected`: changed, or copied from another run or place). Never retried: the same bytes fail the same way.
 */
export class PayloadUnreadableError extends CairnError {
  readonly runId: string;
  readonly reason: PayloadUnreadableReason;

  constructor(
    context: Pick<PayloadContext, 'runId' | 'kind' | 'position'>,
    reason: PayloadUnreadableReason,
    detail: string,
    cause?: unknown,
  ) {
    const where = context.position === '' ? context.kind : `${context.kind} ${context.position}`;
    super(
      'PAYLOAD_UNREADABLE',
      `The ${where} of run "${context.runId}" cannot be read: ${detail}.`,
      {
        data: { runId: context.runId, kind: context.kind, position: context.position, reason },
        ...(cause === undefined ? {} : { cause }),
      },
    );
    this.name = 'PayloadUnreadableError';
    this.runId = context.runId;
    this.reason = reason;
  }
}

const separator = new Uint8Array([0]);
const encoder = new TextEncoder();

/** The context of a payload at a place, with its binding bytes. */
export function payloadContext(
  runId: string,
  incarnation: string,
  kind: PayloadKind,
  position = '',
  subject?: string,
): PayloadContext {
  const parts = ['cairn-payload-1', runId, incarnation, kind, position].map((part) =>
    encoder.encode(part),
  );
  const length = parts.reduce((sum, part) => sum + part.length + 1, 0);
  const binding = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    binding.set(part, at);
    at += part.length;
    binding.set(separator, at);
    at += 1;
  }
  return subject === undefined
    ? { runId, incarnation, kind, position, binding }
    : { runId, incarnation, kind, position, binding, subject };
}
brand(PayloadUnreadableError, 'PayloadUnreadableError');
