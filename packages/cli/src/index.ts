/** @cairn/cli: the `cairn` command, to list, inspect, watch and steer runs from a terminal or a local web page. */
export { runCli } from './run-cli.js';
export type { CliIo } from './command-context.js';
export { exitCodes, exitCodeOf, UsageError } from './cli-errors.js';
export { usage } from './usage.js';
export { openStore } from './store-from-env.js';
export type { OpenedStore } from './store-from-env.js';
export type { StoreSelection } from './parse-args.js';
export { runSummary, runInput } from './run-summary.js';
export type { RunSummary } from './run-summary.js';
export { readTimeline } from './commands/timeline.js';
export { buildTimeline } from './render/timeline-model.js';
export type {
  AttemptEnd,
  AttemptItem,
  AttemptView,
  EffectView,
  RunTimeline,
  TimelineModel,
  UnitView,
} from './render/timeline-model.js';
export { renderTimeline } from './render/timeline-text.js';
export { renderPlan } from './render/plan-dag.js';
export { renderEventLine, describeEvent } from './render/event-line.js';
export { renderRunTable } from './render/run-list.js';
export { renderRunDetail } from './render/run-detail.js';
export type { ChildSummary, RunDetail } from './render/run-detail.js';
export type { ResumeReport } from './commands/resume.js';
export { createStyle, plainStyle } from './render/style.js';
export type { Paint, Style } from './render/style.js';
