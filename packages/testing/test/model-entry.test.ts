import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFakeClock, scriptedModel } from '@cairn/testing/model';
import { describe, expect, it } from 'vitest';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

/** Every module `file` imports, transitively: relative ones by path, packages by name. */
function importsOf(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  for (const [, target] of text.matchAll(/^(?:import|export)[^'"]*from\s+'([^']+)'/gm)) {
    if (target!.startsWith('.'))
      importsOf(resolve(dirname(file), target!.replace(/\.js$/, '.ts')), seen);
    else seen.add(target!);
  }
  return seen;
}

describe('@cairn/testing/model', () => {
  it('gives the scripted model and the fake clock, without vitest anywhere in what it loads', async () => {
    const model = scriptedModel([{ text: 'hi' }], { recordCalls: false });
    const answer = await model.generate({
      messages: [{ role: 'user', content: 'hello' }],
      tools: [],
      signal: new AbortController().signal,
    });
    expect(answer.message.content).toBe('hi');
    expect(createFakeClock().now()).toBeTypeOf('number');
    const loaded = [...importsOf(resolve(src, 'model.ts'))];
    expect(loaded.filter((name) => !name.startsWith('/'))).toEqual(['@cairn/sdk']);
    // The main entry does load vitest (the conformance suite registers tests): what this entry is for.
    expect(importsOf(resolve(src, 'index.ts'))).toContain('vitest');
  });
});
