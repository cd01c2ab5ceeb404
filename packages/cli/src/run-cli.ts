/** `runCli`: one command line, from arguments to exit code, in any process (the bin, a test, a program). */
import { readFileSync } from 'node:fs';
import { createClient } from '@cairn/worker';
import { errorReport, exitCodeOf, exitCodes, formatError } from './cli-errors.js';
import { cancelRun, discardRun } from './commands/cancel-discard.js';
import { listRuns } from './commands/list.js';
import { forgetRuns, reencryptRuns } from './commands/payloads.js';
import { resumeRun } from './commands/resume.js';
import { showRun } from './commands/show.js';
import { decideCall, signalRun } from './commands/signals.js';
import { showTimeline } from './commands/timeline.js';
import { serveUiCommand } from './commands/ui.js';
import { watchRun } from './commands/watch.js';
import { hideEncryptedPayloads } from './encrypted-store.js';
import type { CliIo, CommandContext } from './command-context.js';
import { parseCli, type Command, type ParsedCli } from './parse-args.js';
import { createStyle, plainStyle } from './render/style.js';
import { openStore, type OpenedStore } from './store-from-env.js';
import { usage } from './usage.js';

/**
 * Runs `cairn` with `argv` (the arguments after the command's name) and returns its exit code; output and
 * errors go to `io`. Every connection it opened is closed before it returns.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: ParsedCli;
  try {
    parsed = parseCli(argv, io.env);
  } catch (error) {
    // `--json` may be anywhere on a line that did not parse: honour it for the error.
    return fail(io, error, argv.includes('--json'));
  }
  const { command, json } = parsed;
  if (command.name === 'help') {
    io.stdout(`${usage}\n`);
    return exitCodes.ok;
  }
  if (command.name === 'version') {
    io.stdout(`${version()}\n`);
    return exitCodes.ok;
  }

  let opened: OpenedStore;
  try {
    opened = await openStore(parsed.store, io.env);
  } catch (error) {
    return fail(io, error, json);
  }
  const context: CommandContext = {
    // What commands read and show: a payload a codec encoded that this command cannot decode, as "(encrypted)".
    client: createClient({ store: hideEncryptedPayloads(opened.store) }),
    opened,
    json,
    style: json ? plainStyle : createStyle({ isTty: io.isTty === true, env: io.env }),
    env: io.env,
    print: (text) => io.stdout(`${text}\n`),
    write: (text) => io.stdout(text),
    warn: (text) => io.stderr(`warning: ${text}\n`),
    printJson: (value, options) =>
      io.stdout(
        `${options?.line === true ? JSON.stringify(value) : JSON.stringify(value, null, 2)}\n`,
      ),
    ...(io.signal === undefined ? {} : { signal: io.signal }),
  };
  let code: number;
  try {
    code = await perform(context, command);
  } catch (error) {
    code = fail(io, error, json);
  }
  try {
    await opened.close();
  } catch (error) {
    return code === exitCodes.ok ? fail(io, error, json) : code;
  }
  return code;
}

/** The commands that work on a store. */
type StoreCommand = Exclude<Command, { name: 'help' | 'version' }>;

/** Each command's function, by name. */
const handlers: {
  [Name in StoreCommand['name']]: (
    context: CommandContext,
    command: Extract<StoreCommand, { name: Name }>,
  ) => Promise<number>;
} = {
  list: listRuns,
  show: showRun,
  timeline: showTimeline,
  watch: watchRun,
  cancel: cancelRun,
  discard: discardRun,
  resume: resumeRun,
  signal: signalRun,
  approve: decideCall,
  reject: decideCall,
  ui: serveUiCommand,
  reencrypt: reencryptRuns,
  forget: forgetRuns,
};

function perform(context: CommandContext, command: StoreCommand): Promise<number> {
  const handler = handlers[command.name] as (
    context: CommandContext,
    command: StoreCommand,
  ) => Promise<number>;
  return handler(context, command);
}

/** Reports `error` on stderr and returns its exit code; a usage error points at --help. */
function fail(io: CliIo, error: unknown, json: boolean): number {
  const code = exitCodeOf(error);
  io.stderr(`${formatError(errorReport(error), json)}\n`);
  if (code === exitCodes.usage && !json) io.stderr('See cairn --help.\n');
  return code;
}

function version(): string {
  const manifest = JSON.parse(
    readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
  ) as {
    version: string;
  };
  return manifest.version;
}
