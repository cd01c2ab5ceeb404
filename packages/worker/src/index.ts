/** @cairn/worker: long-lived workers that claim, heartbeat, take over and hand over Cairn runs. */
export { createClient } from './client.js';
export type {
  CairnClient,
  ClientOptions,
  ResultOptions,
  RunInfo,
  StartedRun,
  StartOptions,
} from './client.js';
export type {
  ApproveOptions,
  RejectOptions,
  SignalOptions,
  SignalSender,
} from './client-signals.js';
export type { EventReader, EventsOptions, WatchOptions } from './client-watch.js';
export type { ClientStreamOptions, StreamReader } from './client-stream.js';
export type { WaitingFor } from './run-info.js';
export { createWorker } from './worker.js';
export type { Worker, WorkerOptions } from './worker.js';
export type { Runnable } from './definitions.js';
export type { WorkerEvent } from './events.js';
export { isModuleMissing, loadWorkerModule } from './load-module.js';
export type { LoadModuleOptions, WorkerModule } from './load-module.js';
