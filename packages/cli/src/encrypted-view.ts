/**
 * What `cairn` shows of a run whose payloads a codec encoded (`protectPayloads`) when the command was not given
 * that codec (`--codec`): every encoded value as "(encrypted)", never its ciphertext, while what the store keeps in
 * plaintext (ids, status, times, an error's code, names, counts) shows as before. `hideEncryptedPayloads` puts
 * every answer of the store commands read through here, so no command needs checks of its own.
 */
import {
  isSealed,
  plainKey,
  sealedErrorMessage,
  sealedSnapshotMark,
  type JournalEntry,
  type JsonObject,
  type JsonValue,
  type RunRecord,
  type RunSignal,
  type RunWait,
  type SerializedError,
  type SignalReceipt,
  type StandingDecision,
  type StoredRun,
  type StreamChunk,
} from '@cairn/sdk';
import { UsageError } from './cli-errors.js';

/** What an encoded value shows as: the word the sdk already puts in an encoded error's message. */
export const encryptedText = sealedErrorMessage;

/**
 * The key under which the sdk keeps the encoded part of a snapshot, of an error's data and of a wait's detail: the
 * same key for all three (the sdk exports it only as `sealedSnapshotMark`).
 */
const sealedKey = sealedSnapshotMark;

/** `value` with each encoded string in it shown as "(encrypted)"; the same value when it holds none. */
export function hideSealed(value: JsonValue): JsonValue {
  if (isSealed(value)) return encryptedText;
  if (Array.isArray(value)) {
    const hidden = value.map(hideSealed);
    return hidden.some((item, at) => item !== value[at]) ? hidden : value;
  }
  if (!isObject(value)) return value;
  let hidden: JsonObject | undefined;
  for (const [key, item] of Object.entries(value)) {
    const shown = hideSealed(item);
    if (shown === item) continue;
    hidden ??= { ...value };
    hidden[key] = shown;
  }
  return hidden ?? value;
}

/**
 * Whether a run holds payloads this command reads encoded: its snapshot, its error or its wait detail is in the
 * form `protectPayloads` stores (a store read through the codec answers them decoded). True as much of a record
 * `hideRecordPayloads` made as of the stored one: the forms keep their shape, only their ciphertext is hidden.
 */
export function hasEncryptedPayloads(
  record: Pick<RunRecord, 'snapshot' | 'error' | 'wait'>,
): boolean {
  return (
    (isObject(record.snapshot) && record.snapshot[sealedKey] === 1) ||
    (record.error?.data !== undefined && sealedKey in record.error.data) ||
    (isObject(record.wait?.detail) && sealedKey in record.wait.detail)
  );
}

/** A run's record with each encoded payload shown as "(encrypted)". */
export function hideRecordPayloads(record: RunRecord): RunRecord {
  const hidden: RunRecord = {
    ...record,
    snapshot: hideSnapshot(record.snapshot),
    wait: record.wait === null ? null : hideWait(record.wait),
  };
  if (record.output !== undefined) hidden.output = hideOutput(record.output);
  if (record.error !== undefined) hidden.error = hideError(record.error);
  return hidden;
}

/**
 * An output as it shows: one its definition keeps in plaintext (`ProtectOptions.plaintext`) as its value (its check
 * needs the codec, which this command has not got), any other encoded one as "(encrypted)".
 */
function hideOutput(output: JsonValue): JsonValue {
  if (isObject(output) && plainKey in output) return output[plainKey] ?? null;
  return hideSealed(output);
}

/** A loaded run, its journal and its mailbox with each encoded payload shown as "(encrypted)". */
export function hideStoredRunPayloads(stored: StoredRun): StoredRun {
  return {
    ...stored,
    run: hideRecordPayloads(stored.run),
    journal: stored.journal.map(hideEntry),
    signals: stored.signals.map(hideSignal),
  };
}

export function hideSignal(signal: RunSignal): RunSignal {
  return { ...signal, payload: hideSealed(signal.payload) };
}

/** A signal's receipt, whose standing decision keeps who decided and why encoded. */
export function hideReceipt(receipt: SignalReceipt): SignalReceipt {
  if (receipt.decision === undefined) return receipt;
  const decision = hideSealed(receipt.decision as unknown as JsonValue);
  return { ...receipt, decision: decision as unknown as StandingDecision };
}

/** A stream chunk the codec encoded keeps its `sealed` part, without the ciphertext (the page and `watch` say so). */
export function hideChunk(chunk: StreamChunk): StreamChunk {
  if (chunk.part.type !== 'sealed') return chunk;
  return { ...chunk, part: { type: 'sealed', data: encryptedText } };
}

/** The line a command says once of the payloads it shows as "(encrypted)"; `whose` names them. */
export function encryptedNote(whose = "This run's payloads"): string {
  return `${whose} are encrypted, shown as ${encryptedText}: start cairn with --codec <module> (or CAIRN_CODEC) to read them.`;
}

/**
 * Refuses, naming `action` ("cancel"), a command that would write a payload (a signal, a decision, a cancel's
 * error, a resumed run's checkpoints) into a run whose payloads are encrypted, when it has no codec: it would
 * write plaintext, which the run's workers refuse to read (`PAYLOAD_UNREADABLE`), or perform the run from a state
 * it cannot read.
 */
export function refuseEncryptedWrite(record: RunRecord, action: string): void {
  if (!hasEncryptedPayloads(record)) return;
  throw new UsageError(
    `Cannot ${action} run "${record.runId}": its payloads are encrypted, and what cairn writes without their ` +
      'codec would not be. Start cairn with --codec <module> (or CAIRN_CODEC).',
  );
}

/**
 * The code a listed run marked `unreadable` is read with: a payload its codec cannot decode (a wrong or missing
 * key, a changed row: `protectPayloads` lists it so with `PayloadUnreadableError`'s message), else rows changed
 * behind the store's back. A listing keeps only the message, so the message's form tells them apart.
 */
export function unreadableCode(reason: string): 'PAYLOAD_UNREADABLE' | 'SNAPSHOT_INVALID' {
  return /^The .+ of run ".*" cannot be read: /s.test(reason)
    ? 'PAYLOAD_UNREADABLE'
    : 'SNAPSHOT_INVALID';
}

/** A plaintext snapshot is not walked: it may be a long conversation, and a codec never encodes part of one. */
function hideSnapshot(snapshot: JsonValue | null): JsonValue | null {
  return isObject(snapshot) && snapshot[sealedKey] === 1 ? hideSealed(snapshot) : snapshot;
}

function hideError(error: SerializedError): SerializedError {
  return hideSealed(error as unknown as JsonValue) as unknown as SerializedError;
}

/**
 * An encoded wait keeps in plaintext only what decisions are checked by (each held call's id and arguments hash).
 * The tool and arguments a reader is shown for each are filled in as "(encrypted)", so that `runs show` and the
 * page name them so rather than as missing.
 */
function hideWait(wait: RunWait): RunWait {
  const { detail } = wait;
  if (detail === undefined) return wait;
  if (!isObject(detail) || !(sealedKey in detail)) return { ...wait, detail: hideSealed(detail) };
  const shown = { ...(hideSealed(detail) as JsonObject) };
  if (Array.isArray(detail.approvals)) {
    shown.approvals = detail.approvals.filter(isObject).map((approval) => ({
      callId: approval.callId ?? null,
      argsHash: approval.argsHash ?? null,
      tool: encryptedText,
      args: encryptedText,
      deadline: null,
    }));
  }
  return { ...wait, detail: shown };
}

function hideEntry(entry: JournalEntry): JournalEntry {
  if (entry.type !== 'settled') return entry;
  const outcome = hideSealed(entry.outcome as unknown as JsonValue);
  return { ...entry, outcome: outcome as unknown as typeof entry.outcome };
}

function isObject(value: JsonValue | undefined | null): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
