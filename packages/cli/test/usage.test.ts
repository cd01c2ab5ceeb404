import { describe, expect, it } from 'vitest';
import { cairn, json } from './support.js';

// What `cairn` says before it touches a store: its help, its version, and command lines it cannot use.
describe('cairn usage', () => {
  it('prints its help with the exit codes, and its version', async () => {
    const [help, version, bare] = await Promise.all([
      cairn(['--help'], {}),
      cairn(['--version'], {}),
      cairn([], {}),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: cairn runs <command>/);
    for (const line of [
      /^ {2}0 {4}done/m,
      /^ {2}2 {4}usage/m,
      /^ {2}3 {4}no run/m,
      /^ {2}4 {4}refused/m,
    ]) {
      expect(help.stdout).toMatch(line);
    }
    expect(bare.stdout).toBe(help.stdout);
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  it('exits 2 with one error line on a command line it cannot use', async () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [['jobs', 'list'], {}, /^error USAGE: Unknown command "jobs"/],
      [['runs', 'ui'], {}, /^error USAGE: Unknown command "runs ui"/],
      [['ui', '--limit', '3'], {}, /^error USAGE: "ui" takes no --limit/],
      [['runs', 'explode'], {}, /^error USAGE: Unknown command "runs explode"/],
      [['runs', 'show'], {}, /^error USAGE: Usage: cairn runs show <runId>/],
      [['runs', 'list', '--payload', '{}'], {}, /^error USAGE: "runs list" takes no --payload/],
      [['runs', 'list', '--status', 'done'], {}, /^error USAGE: --status takes queued, running/],
      [
        ['runs', 'list', '--limit', '0'],
        {},
        /^error USAGE: --limit takes a whole number of at least 1/,
      ],
      [
        ['runs', 'signal', 'r', 'n', '--payload', '{nope'],
        {},
        /^error USAGE: --payload is not JSON/,
      ],
      [['runs', 'list'], {}, /^error USAGE: Which store\?/],
      [
        ['runs', 'list'],
        { DATABASE_URL: 'mysql://x' },
        /^error USAGE: DATABASE_URL must be a postgres/,
      ],
    ];
    const results = await Promise.all(cases.map(([args, env]) => cairn(args, env)));
    for (const [at, [args, , message]] of cases.entries()) {
      const result = results[at]!;
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toMatch(/\nSee cairn --help\.\n$/);
      expect(result.stdout).toBe('');
    }
  });

  it('says a missing module is a usage error, and reports usage errors as JSON with --json', async () => {
    const [missing, asJson] = await Promise.all([
      cairn(['runs', 'list', '--module', './no/such/module.js'], {}),
      cairn(['runs', 'list', '--json', '--limit', 'x'], {}),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /^error INVALID_ARGUMENT: No module at .*no\/such\/module\.js\./,
    );
    expect(asJson.code).toBe(2);
    expect(json(asJson.stderr)).toEqual({
      error: {
        code: 'USAGE',
        message: '--limit takes a whole number of at least 1, not "x".',
        data: {},
      },
    });
  });
});
