import { itKeepsInvariants, memorySimulation } from '@cairn/testing';

itKeepsInvariants(memorySimulation(), { schedules: 40 });
