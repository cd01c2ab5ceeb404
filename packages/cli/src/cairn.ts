#!/usr/bin/env node
/** The `cairn` command: `runCli` on this process's arguments, streams and signals. */
import { exitCodes } from './cli-errors.js';
import { runCli } from './run-cli.js';

// The first Ctrl-C stops the command: a watch ends, a resume hands its run over once the effects in flight are
// written, connections close, exit 130. A second one, or a command still going 10 s later, exits at once.
const interrupt = new AbortController();
process.on('SIGINT', () => {
  if (interrupt.signal.aborted) process.exit(exitCodes.interrupted);
  interrupt.abort();
  setTimeout(() => process.exit(exitCodes.interrupted), 10_000).unref();
});

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  isTty: process.stdout.isTTY === true,
  signal: interrupt.signal,
});
