/**
 * `@cairn/testing/model`: what a worker, a demo or a load test may import in production code, without vitest
 * (which the package's main entry loads for the conformance suite and the simulation): the scripted model
 * and the fake clock.
 */
export { createFakeClock } from './fake-clock.js';
export type { FakeClock, FakeClockOptions } from './fake-clock.js';
export { scriptedModel } from './scripted-model.js';
export type {
  Script,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedTurn,
} from './scripted-model.js';
