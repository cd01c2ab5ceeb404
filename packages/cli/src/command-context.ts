/** What a command runs with: the client over the opened store, and where and how it prints. */
import type { JsonValue } from '@cairn/sdk';
import type { CairnClient } from '@cairn/worker';
import type { Style } from './render/style.js';
import type { OpenedStore } from './store-from-env.js';

/** The process a command line runs in, as `runCli` sees it: tests hand in their own. */
export interface CliIo {
  /** Writes text to standard output as it is (no newline added). */
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Standard output is a terminal: colour is used unless NO_COLOR is set. @defaultValue false */
  isTty?: boolean;
  /** Aborted on Ctrl-C: `runs watch` stops and the command exits 130. */
  signal?: AbortSignal;
}

/** A command's view of the world. */
export interface CommandContext {
  /** What commands read through: payloads it cannot decode show as "(encrypted)" (`hideEncryptedPayloads`). */
  client: CairnClient;
  opened: OpenedStore;
  json: boolean;
  style: Style;
  /** The command's environment variables. */
  env: NodeJS.ProcessEnv;
  /** Prints one line (or lines) of text to stdout. */
  print(text: string): void;
  /** Writes text to stdout as it is, with no newline: a run's streamed text as it comes. */
  write(text: string): void;
  /** Prints a warning line to stderr: what a user should know, that is not the command's output. */
  warn(text: string): void;
  /** Prints a value as JSON to stdout, indented for one-shot commands, on one line for streams. */
  printJson(value: unknown, options?: { line?: boolean }): void;
  signal?: AbortSignal;
}

/** Drops `undefined` fields, so that `--json` output never depends on how a value was assembled. */
export function jsonOf(value: unknown): JsonValue {
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}
