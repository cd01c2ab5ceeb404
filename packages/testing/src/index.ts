/** @cairn/testing: a fake clock, a scripted model, crash injection and the store conformance suite. */
export { createFakeClock } from './fake-clock.js';
export type { FakeClock, FakeClockOptions } from './fake-clock.js';
export { scriptedModel } from './scripted-model.js';
export type {
  Script,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedTurn,
} from './scripted-model.js';
export { exploreCrashes, observeAgent, SimulatedCrash } from './crash-harness.js';
export type {
  CrashCase,
  CrashReport,
  CrashScenario,
  Observation,
  Resumable,
  ScenarioWorld,
} from './crash-harness.js';
