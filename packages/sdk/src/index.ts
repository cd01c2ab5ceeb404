/**
 * @cairn/sdk: durable agents and planners as deterministic step functions, and the runtime that
 * checkpoints them.
 */
export { systemClock } from './clock.js';
export type { Clock, TimerHandle } from './clock.js';
export {
  AgentDriftError,
  CairnError,
  DriftError,
  LeaseHeldError,
  LeaseLostError,
  NodeFailedError,
  OutputValidationError,
  PlannerDriftError,
  RunNotFoundError,
  RunSuspendedError,
  RunWaitingError,
  deserializeError,
  isCairnError,
  notAChildError,
  runEndedError,
  serializeError,
  snapshotInvalidError,
} from './errors.js';
export type { CairnErrorCode, CairnErrorOptions, SerializedError } from './errors.js';
export type { JsonInput, JsonObject, JsonValue } from './json.js';
export { addUsage, zeroUsage } from './model.js';
export type {
  Model,
  ModelMessage,
  ModelRequest,
  ModelResponse,
  ModelStreamPart,
  ModelToolCall,
  ToolCall,
  ToolSpec,
  Usage,
} from './model.js';
export { defineTool } from './tool.js';
export { redactedMark, redactFields } from './redact.js';
export type { AnyTool, Tool, ToolArgs, ToolConfig, ToolContext } from './tool.js';
export { defineAgent } from './agent/define-agent.js';
export type { Agent, AgentConfig, AgentOutput, AgentResult } from './agent/define-agent.js';
export type { AgentState } from './agent/agent-state.js';
export { outcomeUnknownResult } from './agent/agent-step.js';
export {
  agentSignals,
  parseApprovalDecision,
  pendingApprovals,
  sendApprovalDecision,
  toolArgsHash,
} from './agent/agent-signals.js';
export type {
  ApprovalDecision,
  ApprovalReceipt,
  PendingApprovalView,
} from './agent/agent-signals.js';
export {
  callKey,
  checkDecision,
  decide,
  decisionKey,
  decisionRefusal,
  decisionSignal,
  standingDecision,
  waitedArgsHash,
} from './store/decisions.js';
export type { DecisionVerdict, KeptDecision, StandingDecision } from './store/decisions.js';
export { waitUntilTool } from './agent/agent-waits.js';
export type {
  AgentApprovalPolicy,
  ApprovalPolicy,
  ApprovalRule,
  CapabilityApprovalRules,
  HeldCall,
  ToolApprovalRules,
} from './approvals.js';
export { claimableStatuses, isTerminalStatus, terminalStatuses } from './store/contract.js';
export type {
  AcquireOptions,
  Checkpoint,
  ClaimableOptions,
  ClaimOptions,
  DurableStore,
  EffectOutcome,
  Fence,
  JournalEntry,
  Lease,
  LeaseStore,
  NewRun,
  PruneOptions,
  RunFilter,
  RunRecord,
  RunStatus,
  SaveReceipt,
  SnapshotStore,
  StatusUpdate,
  StoredRun,
} from './store/contract.js';
export {
  checkNewSignal,
  checkRunWait,
  isWaitDue,
  maxSignalNameLength,
  maxSignalPayloadBytes,
} from './store/waits.js';
export type { NewSignal, RunSignal, RunWait, SignalReceipt } from './store/waits.js';
export {
  checkStreamChunks,
  maxStreamName,
  maxStreamRead,
  maxStreamText,
  streamChunksToKeep,
  streamGapError,
  streamReadAfter,
  streamReadLimit,
} from './store/stream.js';
export type {
  StreamChunk,
  StreamPart,
  StreamReadOptions,
  StreamStore,
  ToolOutcomePart,
} from './store/stream.js';
export { foldStream } from './stream-text.js';
export type { StreamFold } from './stream-text.js';
export { memoryStore } from './store/memory-store.js';
export type { MemoryStoreOptions } from './store/memory-store.js';
export { runDurable } from './runtime/run-durable.js';
export type { DurableRunOptions, DurableRunResult } from './runtime/run-durable.js';
export { createRunner } from './runtime/runner.js';
export {
  advisorySnapshotKeys,
  initialRunSnapshot,
  unstartedRunSnapshot,
  unstartedSignature,
} from './runtime/runtime-snapshot.js';
export { cairnTracer, tracerName } from './runtime/tracing.js';
export type { StoredTraceContext } from './runtime/tracing.js';
export type { DurableOptions, ExecuteOptions, ResumeOptions, Runner } from './runtime/runner.js';
export { defaultStoreRetry } from './runtime/run-writer.js';
export type { StoreRetryPolicy } from './runtime/run-writer.js';
export { checkStreamOptions, checkStreamStore } from './runtime/stream-options.js';
export type { StreamOptions } from './runtime/stream-options.js';
export type {
  Boundary,
  BoundaryHook,
  BoundaryPoint,
  Command,
  DurableDefinition,
  Effect,
  EffectContext,
  EffectTelemetry,
  PerformCommand,
  RetryPolicy,
  SettledEffect,
  StepEvent,
  StepResult,
  WaitCommand,
} from './runtime/step-function.js';
export { definePlanner } from './planner/define-planner.js';
export type { Planner, PlannerConfig, PlannerResult } from './planner/define-planner.js';
export type { Capability, CapabilityInput, Executable } from './planner/capability.js';
export type { Plan, PlanNode } from './planner/plan.js';
export { planLimits } from './planner/plan-limits.js';
export {
  planView,
  type PlanNodeState,
  type PlanNodeView,
  type PlanView,
} from './planner/plan-view.js';
export type {
  ChildReport,
  FrozenPlan,
  LedgerEntry,
  PlannerState,
  PlanningMessage,
} from './planner/planner-state.js';
export {
  checkNewRunId,
  checkRunId,
  checkSubject,
  childRunId,
  maxRunIdLength,
  maxSubjectLength,
  reservedRunIdPrefix,
} from './run-id.js';
export { runEvents } from './history/stored-history.js';
export type {
  AbandonedHow,
  EffectOutcomeStatus,
  HistoryUsage,
  RunEvent,
  RunEventType,
} from './history/run-events.js';
export { aesGcmCodec } from './payload/aes-gcm.js';
export type { AesGcmOptions } from './payload/aes-gcm.js';
export { deflateCodec } from './payload/compress.js';
export { PayloadUnreadableError, payloadContext } from './payload/codec.js';
export type {
  EncodedPayload,
  PayloadCodec,
  PayloadContext,
  PayloadKind,
  PayloadUnreadableReason,
} from './payload/codec.js';
export { isSealed, PayloadSealer, sealedPrefix } from './payload/sealer.js';
export type { SealerOptions } from './payload/sealer.js';
export { plainKey, sealedErrorMessage } from './payload/sealed-parts.js';
export type { PlaintextField } from './payload/sealed-parts.js';
export { sealedSnapshotMark } from './payload/sealed-snapshot.js';
export { isProtectedStore, protectPayloads } from './payload/protected-store.js';
export type { ProtectOptions } from './payload/protected-store.js';
export type { ReencryptOptions, ReencryptReport } from './store/reencrypt-types.js';
export { memoryKeyring, SubjectForgottenError, subjectHash } from './payload/subject-keys.js';
export type { SubjectKey, SubjectKeyring } from './payload/subject-keys.js';
export type { ForgetOptions, ForgetReport, ForgetTarget } from './store/forget-types.js';
export {
  checkReplacements,
  minReplacedLength,
  replaceInJsonText,
  replaceStrings,
  type KeptSignalPayload,
} from './store/payload-rewrite.js';
export { listPages } from './store/list-pages.js';
