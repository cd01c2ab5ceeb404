import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const tsx = createRequire(import.meta.url).resolve('tsx/esm');

/** Runs an example as a user would (`pnpm example:*`) and returns what it printed. */
async function example(file: string): Promise<string> {
  const script = fileURLToPath(new URL(file, import.meta.url));
  const { stdout } = await run(
    process.execPath,
    ['--import', tsx, '--conditions=@cairn/source', script],
    {
      timeout: 60_000,
    },
  );
  return stdout;
}

describe('the examples', () => {
  it('crash-and-resume: the in-flight email is reported unknown and no tool runs twice', async () => {
    const printed = await example('./crash-and-resume.ts');
    expect(printed).toContain('simulated crash at effect.after trip-2/tool/email');
    expect(printed).toContain('send_email (email): {"error":"OUTCOME_UNKNOWN"');
    expect(printed).toContain('no tool ran twice');
    expect(printed).toContain('"inputTokens":400');
  });

  it('tracing: the resumed run span links to the first trace and reports only what ran again', async () => {
    const printed = await example('./tracing.ts');
    expect(printed).toMatch(/cairn\.run .*run\.outcome=crashed/);
    expect(printed).toMatch(/cairn\.run .*run\.resumed=true .*links to trace/);
    expect(printed).toContain('effect.outcome=unknown');
  });
});
