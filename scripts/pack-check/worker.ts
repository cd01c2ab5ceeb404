// The fresh app's worker module, as a new user writes it for `cairn-worker` on Postgres and starts it as a .ts
// module (see worker-bin.mjs). The model and the tool live here only: client.ts starts runs by name.
import { defineAgent, defineTool } from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import { scriptedModel } from '@cairn/testing/model';
import postgres from 'postgres';
import { z } from 'zod';

const { DATABASE_URL: url, PACK_CHECK_SCHEMA: schema } = process.env;
if (url === undefined || schema === undefined)
  throw new Error('Set DATABASE_URL and PACK_CHECK_SCHEMA.');

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => ({ sum: a + b }),
});

// Asks the tool to add the two numbers of the prompt, then answers with what the tool returned.
const model = scriptedModel((request, turn) => {
  if (turn === 0) {
    const prompt = request.messages.find((message) => message.role === 'user')?.content;
    const [a = 0, b = 0] = String(prompt).match(/\d+/g)?.map(Number) ?? [];
    return { toolCalls: [{ name: 'add', args: { a, b } }] };
  }
  const result = request.messages.filter((message) => message.role === 'tool').at(-1);
  return { text: JSON.stringify(result?.content) };
});

const sql = postgres(url);
export const store = pgStore({ sql, schema });
export const agents = [
  defineAgent({ name: 'adder', model, tools: [add], output: z.object({ sum: z.number() }) }),
];
export const close = () => sql.end();
