import { createHash, createHmac } from 'node:crypto';
import { CairnError, type SerializedError } from '../errors.js';
import { canonicalJson, type JsonObject, type JsonValue } from '../json.js';
import type { JournalEntry, RunRecord, StoredRun } from '../store/contract.js';
import { decisionSignal, type StandingDecision } from '../store/decisions.js';
import { checkStreamChunks, type StreamChunk } from '../store/stream.js';
import type { RunSignal, RunWait, SignalReceipt } from '../store/waits.js';
import { PayloadUnreadableError } from './codec.js';
import { SnapshotSealer, storedSubject } from './sealed-snapshot.js';
import { PayloadSealer, type SealerOptions } from './sealer.js';

/** Options of `protectPayloads`. */
export interface ProtectOptions extends SealerOptions {
  /**
   * A secret (32 bytes, or base64 of them) the arguments hash of a held call is keyed with where it is stored in
   * plaintext (a store checks decisions by it): without it, that hash is the plain SHA-256 of the arguments,
   * which can be guessed for guessable arguments. Keep it while runs wait: a decision is checked against the
   * hash stored with its wait.
   */
  argsHashKey?: Uint8Array | string;
  /**
   * What each definition (by name) keeps in plaintext, to be read and searched without the codec: `'output'`,
   * the run's result. Such a value is stored as it is, beside a check encoded for its place (its run and
   * incarnation), so it cannot be changed or copied from another run unseen; a reader needs no setting to read
   * it. Everything else stays encoded. @defaultValue nothing
   */
  plaintext?: Readonly<Record<string, readonly PlaintextField[]>>;
}

/** What a definition may keep in plaintext (`ProtectOptions.plaintext`). */
export type PlaintextField = 'output';

/** Where a plaintext payload keeps its value, beside the check of it encoded for its place. */
export const plainKey = 'cairn:plain';

/** What a plaintext payload's check encodes: the SHA-256 of its canonical JSON. */
function plainDigest(value: JsonValue | undefined): string {
  return createHash('sha256')
    .update(canonicalJson(value ?? null), 'utf8')
    .digest('hex');
}

/** Where a sealed error, wait detail or signal field keeps its encoded payload. */
const sealedKey = 'cairn:sealed';
/** What a sealed error says in place of its message to whoever reads it without the codec. */
export const sealedErrorMessage = '(encrypted)';

/**
 * Encodes every payload of a run's rows, and decodes them: what a store may read stays plaintext (ids, names,
 * statuses, times, positions, an error's code, an approval's call id and arguments hash, a wait's time and
 * signal names); the rest (state, conversation, history, tool arguments and results, outputs, error messages,
 * signal payloads, stream chunks) is encoded, each part bound to its run and place.
 */
export class PayloadProtector {
  readonly sealer: PayloadSealer;
  private readonly snapshots: SnapshotSealer;
  private readonly argsHashKey: Buffer | undefined;

  /**
   * Of each run read or written here, most recent last: whose data it holds (null: nobody's) and its definition's
   * name (what it keeps in plaintext; unknown for a run that is not stored).
   */
  private readonly runs = new Map<string, { subject: string | null; name?: string }>();
  private readonly plaintext: ProtectOptions['plaintext'];

  /** `sealer`: one of the caller's making (re-encryption records what it opens). */
  constructor(options: ProtectOptions, sealer: PayloadSealer = new PayloadSealer(options)) {
    this.sealer = sealer;
    this.plaintext = options.plaintext;
    this.sealer.subjectOf = (runId) => this.runs.get(runId)?.subject ?? undefined;
    this.snapshots = new SnapshotSealer(this.sealer);
    const key = options.argsHashKey;
    this.argsHashKey =
      key === undefined
        ? undefined
        : typeof key === 'string'
          ? Buffer.from(key, 'base64')
          : Buffer.from(key);
    if (this.argsHashKey !== undefined && this.argsHashKey.length < 32) {
      throw new CairnError(
        'INVALID_ARGUMENT',
        `argsHashKey is ${this.argsHashKey.length} bytes; give at least 32 (base64 of 32 random bytes).`,
      );
    }
  }

  /** Records whose data a run holds and its definition: what is written for it next is encrypted for that subject, and kept in plaintext where its definition says. */
  learnRun(runId: string, subject: string | null, name: string | undefined): void {
    this.runs.delete(runId);
    this.runs.set(runId, name === undefined ? { subject } : { subject, name });
    // Bounded: a run forgotten here is read again (`knowsRun`) before its next write.
    if (this.runs.size > 50_000) this.runs.delete(this.runs.keys().next().value!);
  }

  knowsRun(runId: string): boolean {
    return this.runs.has(runId);
  }

  subjectOf(runId: string): string | undefined {
    return this.runs.get(runId)?.subject ?? undefined;
  }

  sealSnapshot(snapshot: JsonValue, runId: string, incarnation: string): Promise<JsonValue> {
    return this.snapshots.seal(snapshot, runId, incarnation, this.sealer.subjectOf(runId));
  }

  /** A run's output: encoded, or as it is beside its check when its definition keeps it in plaintext. */
  async sealOutput(value: JsonValue, runId: string, incarnation: string): Promise<JsonValue> {
    const context = this.sealer.context(runId, incarnation, 'output');
    if (!this.keepsPlain(runId, 'output')) return this.sealer.seal(value, context);
    return { [plainKey]: value, check: await this.sealer.seal(plainDigest(value), context) };
  }

  /** A run's output as `sealOutput` stored it; `PayloadUnreadableError` when it, or its check, does not hold. */
  async openOutput(stored: JsonValue, runId: string, incarnation: string): Promise<JsonValue> {
    const context = this.sealer.context(runId, incarnation, 'output');
    if (!isObject(stored) || !(plainKey in stored)) return this.sealer.open(stored, context);
    const check = await this.sealer.open(stored.check, context);
    if (check !== plainDigest(stored[plainKey])) {
      throw new PayloadUnreadableError(
        context,
        'rejected',
        'its plaintext does not match its check (changed, or copied from another run or place)',
      );
    }
    return stored[plainKey]!;
  }

  private keepsPlain(runId: string, field: PlaintextField): boolean {
    const name = this.runs.get(runId)?.name;
    return name !== undefined && (this.plaintext?.[name]?.includes(field) ?? false);
  }

  /** An error's name, code and retryability stay readable; its message, data and causes are encoded. */
  async sealError(error: SerializedError, runId: string, incarnation: string, position = '') {
    const sealed = await this.sealer.seal(
      error as unknown as JsonValue,
      this.sealer.context(runId, incarnation, 'error', position),
    );
    return {
      name: error.name,
      code: error.code,
      message: sealedErrorMessage,
      retryable: error.retryable,
      data: { [sealedKey]: sealed },
    } satisfies SerializedError;
  }

  async openError(
    error: SerializedError,
    runId: string,
    incarnation: string,
    position = '',
  ): Promise<SerializedError> {
    const context = this.sealer.context(runId, incarnation, 'error', position);
    const opened = await this.sealer.open(error.data?.[sealedKey], context);
    if (opened === null || typeof opened !== 'object' || Array.isArray(opened)) {
      throw new PayloadUnreadableError(context, 'malformed', 'it is not an error');
    }
    return opened as unknown as SerializedError;
  }

  async sealEntries(
    entries: readonly JournalEntry[],
    runId: string,
    incarnation: string,
  ): Promise<JournalEntry[]> {
    const sealed: JournalEntry[] = [];
    for (const entry of entries) {
      // An entry that is not what the runtime writes is handed on as it is, for the store to refuse.
      if (entry.type !== 'settled' || !isObject(entry.outcome as JsonValue | undefined)) {
        sealed.push(entry);
        continue;
      }
      const position = `${entry.effectId}#${entry.seq}`;
      const { outcome } = entry;
      let stored: typeof outcome;
      if (outcome.status === 'ok') {
        const context = this.sealer.context(runId, incarnation, 'journal', position);
        stored = { status: 'ok', value: await this.sealer.seal(outcome.value, context) };
      } else if (outcome.error !== undefined) {
        stored = {
          status: outcome.status,
          error: await this.sealError(outcome.error, runId, incarnation, position),
        } as typeof outcome;
      } else {
        stored = outcome;
      }
      sealed.push({ ...entry, outcome: stored });
    }
    return sealed;
  }

  async openEntries(
    entries: readonly JournalEntry[],
    runId: string,
    incarnation: string,
  ): Promise<JournalEntry[]> {
    const opened: JournalEntry[] = [];
    for (const entry of entries) {
      // Not what the runtime writes: handed on as it is, for the runtime to refuse (`SNAPSHOT_INVALID`).
      if (entry.type !== 'settled' || !isObject(entry.outcome as JsonValue | undefined)) {
        opened.push(entry);
        continue;
      }
      const position = `${entry.effectId}#${entry.seq}`;
      const { outcome } = entry;
      let read: typeof outcome;
      if (outcome.status === 'ok') {
        const context = this.sealer.context(runId, incarnation, 'journal', position);
        read = { status: 'ok', value: await this.sealer.open(outcome.value, context) };
      } else if (outcome.error !== undefined) {
        const error = await this.openError(outcome.error, runId, incarnation, position);
        read = { status: outcome.status, error } as typeof outcome;
      } else {
        read = outcome;
      }
      opened.push({ ...entry, outcome: read });
    }
    return opened;
  }

  /**
   * A signal's payload, bound to its run and name (a client sends it to a run id, before any incarnation is
   * known to it). A decision keeps what a store checks it by (call id, approval, arguments hash) readable; who
   * decided and why are encoded.
   */
  async sealSignalPayload(runId: string, name: string, payload: JsonValue): Promise<JsonValue> {
    if (name === decisionSignal && isObject(payload)) {
      const { by, reason, argsHash } = payload;
      const sealed: JsonObject = { ...payload };
      delete sealed.by;
      if (typeof argsHash === 'string') sealed.argsHash = this.keyedArgsHash(argsHash);
      // `by` carries who decided and the hash the sender named (the store keeps only the keyed one).
      const sender: JsonObject = {
        ...(typeof by === 'string' ? { by } : {}),
        ...(typeof argsHash === 'string' && this.argsHashKey !== undefined ? { argsHash } : {}),
      };
      if (Object.keys(sender).length > 0)
        sealed.by = await this.sealer.seal(sender, this.decisionContext(runId, 'by'));
      if (typeof reason === 'string')
        sealed.reason = await this.sealer.seal(reason, this.decisionContext(runId, 'reason'));
      return sealed;
    }
    return this.sealer.seal(payload, this.sealer.context(runId, '', 'signal', name));
  }

  async openSignalPayload(runId: string, name: string, payload: JsonValue): Promise<JsonValue> {
    if (name === decisionSignal) {
      if (!isObject(payload)) return payload;
      const opened: JsonObject = { ...payload };
      delete opened.by;
      if (payload.by !== undefined) {
        const sender = await this.sealer.open(payload.by, this.decisionContext(runId, 'by'));
        if (!isObject(sender)) {
          const context = this.decisionContext(runId, 'by');
          throw new PayloadUnreadableError(context, 'malformed', 'it is not who decided');
        }
        if (typeof sender.by === 'string') opened.by = sender.by;
        if (typeof sender.argsHash === 'string') opened.argsHash = sender.argsHash;
      }
      if (payload.reason !== undefined)
        opened.reason = await this.sealer.open(
          payload.reason,
          this.decisionContext(runId, 'reason'),
        );
      return opened;
    }
    return this.sealer.open(payload, this.sealer.context(runId, '', 'signal', name));
  }

  private decisionContext(runId: string, field: 'by' | 'reason') {
    return this.sealer.context(runId, '', 'signal', `${decisionSignal}:${field}`);
  }

  /**
   * The arguments hash a store checks decisions by, as stored: keyed (HMAC-SHA256 under `argsHashKey`) when a
   * key is given, so a hash of guessable arguments (a card number) cannot be guessed from the rows.
   */
  private keyedArgsHash(argsHash: string): string {
    if (this.argsHashKey === undefined) return argsHash;
    return createHmac('sha256', this.argsHashKey).update(argsHash, 'utf8').digest('hex');
  }

  async openSignals(runId: string, signals: readonly RunSignal[]): Promise<RunSignal[]> {
    const opened: RunSignal[] = [];
    for (const signal of signals) {
      opened.push({
        ...signal,
        payload: await this.openSignalPayload(runId, signal.name, signal.payload),
      });
    }
    return opened;
  }

  async openReceipt(runId: string, receipt: SignalReceipt): Promise<SignalReceipt> {
    if (receipt.decision === undefined) return receipt;
    const decision = await this.openSignalPayload(
      runId,
      decisionSignal,
      receipt.decision as unknown as JsonValue,
    );
    return { ...receipt, decision: decision as unknown as StandingDecision };
  }

  /** A wait's time and signal names stay readable; its detail is encoded, but for what decisions are checked by. */
  async sealWait(wait: RunWait, runId: string, incarnation: string): Promise<RunWait> {
    if (wait.detail === undefined) return wait;
    const context = this.sealer.context(runId, incarnation, 'wait');
    const detail: JsonObject = { [sealedKey]: await this.sealer.seal(wait.detail, context) };
    if (incarnation === '') detail.created = true;
    const approvals = isObject(wait.detail) ? wait.detail.approvals : undefined;
    if (Array.isArray(approvals)) {
      detail.approvals = approvals.filter(isObject).map(({ callId, argsHash }) => ({
        callId: callId ?? null,
        argsHash: typeof argsHash === 'string' ? this.keyedArgsHash(argsHash) : null,
      }));
    }
    return { ...wait, detail };
  }

  async openWait(wait: RunWait, runId: string, incarnation: string): Promise<RunWait> {
    if (wait.detail === undefined) return wait;
    const bound = isObject(wait.detail) && wait.detail.created === true ? '' : incarnation;
    const stored = isObject(wait.detail) ? wait.detail[sealedKey] : wait.detail;
    const detail = await this.sealer.open(stored, this.sealer.context(runId, bound, 'wait'));
    return { ...wait, detail };
  }

  async sealChunks(
    chunks: readonly StreamChunk[],
    runId: string,
    incarnation: string,
  ): Promise<StreamChunk[]> {
    // Checked before they are encoded: a malformed chunk must be refused as the store would refuse it.
    checkStreamChunks(runId, chunks);
    const sealed: StreamChunk[] = [];
    for (const chunk of chunks) {
      const context = this.sealer.context(runId, incarnation, 'stream', String(chunk.position));
      const data = await this.sealer.seal(chunk.part as unknown as JsonValue, context);
      sealed.push({ ...chunk, part: { type: 'sealed', data } });
    }
    return sealed;
  }

  async openChunks(
    chunks: readonly StreamChunk[],
    runId: string,
    incarnation: string,
  ): Promise<StreamChunk[]> {
    const opened: StreamChunk[] = [];
    for (const chunk of chunks) {
      const context = this.sealer.context(runId, incarnation, 'stream', String(chunk.position));
      const stored = chunk.part.type === 'sealed' ? chunk.part.data : chunk.part;
      const part = await this.sealer.open(stored, context);
      opened.push({ ...chunk, part: part as unknown as StreamChunk['part'] });
    }
    return opened;
  }

  /** A stored run with every payload decoded; `PayloadUnreadableError` when one cannot be. */
  async openRecord(record: RunRecord): Promise<RunRecord> {
    const { runId, incarnation } = record;
    const subject = storedSubject(record.snapshot);
    this.learnRun(runId, subject ?? null, record.name);
    const opened: RunRecord = { ...record, ...(subject === undefined ? {} : { subject }) };
    if (record.snapshot !== null)
      opened.snapshot = await this.snapshots.open(record.snapshot, runId, incarnation);
    if (record.output !== undefined)
      opened.output = await this.openOutput(record.output, runId, incarnation);
    if (record.error !== undefined)
      opened.error = await this.openError(record.error, runId, incarnation);
    if (record.wait !== null) opened.wait = await this.openWait(record.wait, runId, incarnation);
    return opened;
  }

  async openStoredRun(stored: StoredRun): Promise<StoredRun> {
    const { runId, incarnation } = stored.run;
    return {
      ...stored,
      run: await this.openRecord(stored.run),
      journal: await this.openEntries(stored.journal, runId, incarnation),
      signals: await this.openSignals(runId, stored.signals),
    };
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
