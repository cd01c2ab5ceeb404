/** @cairn/testing: a fake clock, a scripted model, crash injection and the store conformance suite. */
export * from './model.js';
export { exploreCrashes, observeAgent, observePlanner, SimulatedCrash } from './crash-harness.js';
export type {
  CrashCase,
  CrashReport,
  CrashScenario,
  Observation,
  Resumable,
  ScenarioWorld,
} from './crash-harness.js';
// conformance suite and postgres helper
export { describeStoreConformance } from './conformance/describe-store-conformance.js';
export { describePayloadTampering } from './conformance/payload-tamper-tests.js';
export { describeKeyringConformance } from './conformance/keyring-tests.js';
export type { KeyringHarness, KeyringHarnessFactory } from './conformance/keyring-tests.js';
export type {
  StoreConformanceOptions,
  StoreHarness,
  StoreHarnessFactory,
} from './conformance/harness.js';
export { createTestDatabase, useTestDatabase } from './postgres.js';
export type { TestDatabase, TestDatabaseOptions } from './postgres.js';
export { freePort } from './free-port.js';
export { LineProcess } from './line-process.js';
export type { LineProcessOptions, PrintedLine } from './line-process.js';
export { startTcpProxy } from './tcp-proxy.js';
export type { TcpProxy } from './tcp-proxy.js';
export { describeFailure, exploreSchedules } from './simulation/explore-schedules.js';
export type { ExplorationReport, ExploreOptions } from './simulation/explore-schedules.js';
export { runSchedule } from './simulation/run-schedule.js';
export type { ScheduleOptions, ScheduleResult } from './simulation/run-schedule.js';
export { memorySimulation } from './simulation/backend.js';
export type { SimulationBackend, SimulationSpace } from './simulation/backend.js';
export { simulationSeeds } from './simulation/seeds.js';
export { itKeepsInvariants } from './simulation/simulation-test.js';
export type { SimulationTestOptions } from './simulation/simulation-test.js';
