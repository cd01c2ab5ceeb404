/** `cairn ui`: the local web page of runs (`serveUi`), served until Ctrl-C. */
import { exitCodes } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { isLoopback, serveUi } from '../ui/serve-ui.js';

/**
 * Serves the page on the store the command opened and prints its address (`{"url": ...}` with `--json`); on
 * Ctrl-C closes it, with every open watch, and exits 130. Without an abort signal (a program's `runCli`) it
 * serves until the process ends.
 */
export async function serveUiCommand(
  context: CommandContext,
  { host, port }: { host?: string; port?: number },
): Promise<number> {
  const server = await serveUi({
    client: context.client,
    ...(host === undefined ? {} : { host }),
    ...(port === undefined ? {} : { port }),
  });
  if (host !== undefined && !isLoopback(host.toLowerCase())) {
    context.warn(
      `cairn ui listens on ${host}: anyone who can reach this machine there can read every run in the store ` +
        '(tool arguments and results, model text). Use an SSH tunnel to 127.0.0.1 rather than exposing it.',
    );
  }
  if (context.json) context.printJson({ url: server.url }, { line: true });
  else context.print(`cairn ui: ${server.url} (Ctrl-C stops it)`);
  await new Promise<void>((resolve) => {
    if (context.signal?.aborted === true) resolve();
    context.signal?.addEventListener('abort', () => resolve(), { once: true });
  });
  await server.close();
  return exitCodes.interrupted;
}
