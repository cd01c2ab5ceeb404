#!/usr/bin/env node
/** The `cairn` command: `runCli` on this process's arguments, streams and signals. */
import { exitCodes } from './cli-errors.js';
import { runCli } from './run-cli.js';

// The first Ctrl-C stops the command: a watch ends, a resume hands its run over once the effects in flight are
// written, connections close, exit 130. A second one, or a command still going 10 s later, exits at once.
const interrupt = new AbortController();
const stop = () => {
  if (interrupt.signal.aborted) process.exit(exitCodes.interrupted);
  interrupt.abort();
  setTimeout(() => process.exit(exitCodes.interrupted), 10_000).unref();
};
process.on('SIGINT', stop);

// A reader that went away (`cairn runs watch r | head`) is not an error: stop as on Ctrl-C, print nothing more,
// and exit 0 as a command whose output was taken in full.
let readerGone = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  readerGone = true;
  if (!interrupt.signal.aborted) stop();
});

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => {
    if (!readerGone) process.stdout.write(text);
  },
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  isTty: process.stdout.isTTY === true,
  signal: interrupt.signal,
});
process.exitCode = readerGone && code === exitCodes.interrupted ? exitCodes.ok : code;
