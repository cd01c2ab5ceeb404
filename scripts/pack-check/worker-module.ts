// What `cairn-worker out/worker-module.js` runs in the pack check: a memory store with one queued run.
import { defineAgent, memoryStore } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing/model';
import { createClient } from '@cairn/worker';

const store = memoryStore();
const greeter = defineAgent({ name: 'greeter', model: scriptedModel([{ text: 'hello' }]) });
// Started by kind and name, as a client process without the model or tools would.
await createClient({ store }).start({ kind: 'agent', name: 'greeter' }, 'hi', { runId: 'greet-1' });

export default { store, agents: [greeter] };
