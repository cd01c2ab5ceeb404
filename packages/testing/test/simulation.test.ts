import { itKeepsInvariants, memorySimulation } from '@cairn/testing';

// 1248: an approved call its crashed holder had checkpointed was dropped for steers that came meanwhile.
itKeepsInvariants(memorySimulation(), { schedules: 100, regressions: [1248] });
