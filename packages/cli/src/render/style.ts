/** ANSI colour for a terminal, and none for a pipe, a file or a user who set NO_COLOR. */

/** Wraps text in one look; the identity when colour is off. */
export type Paint = (text: string) => string;

/** The looks the renderers use, by what they mean rather than by colour. */
export interface Style {
  strong: Paint;
  faint: Paint;
  good: Paint;
  bad: Paint;
  warn: Paint;
  /** What must not be missed: an outcome nobody knows. */
  alarm: Paint;
  accent: Paint;
}

const ansi =
  (open: number, close: number): Paint =>
  (text) =>
    `\u001b[${open}m${text}\u001b[${close}m`;

const plain: Style = {
  strong: (text) => text,
  faint: (text) => text,
  good: (text) => text,
  bad: (text) => text,
  warn: (text) => text,
  alarm: (text) => text,
  accent: (text) => text,
};

const coloured: Style = {
  strong: ansi(1, 22),
  faint: ansi(2, 22),
  good: ansi(32, 39),
  bad: ansi(31, 39),
  warn: ansi(33, 39),
  alarm: (text) => `\u001b[1;7;33m${text}\u001b[0m`,
  accent: ansi(36, 39),
};

/** The style for output to a stream: colour only on a TTY, and never with NO_COLOR set (no-color.org). */
export function createStyle(options: { isTty: boolean; env: NodeJS.ProcessEnv }): Style {
  const noColor = options.env.NO_COLOR;
  return options.isTty && (noColor === undefined || noColor === '') ? coloured : plain;
}

/** A style that never colours, for `--json` and tests. */
export const plainStyle: Style = plain;

/** How many columns text takes on a terminal, its colour codes left out. */
export function visibleLength(text: string): number {
  return text.replace(/\u001b\[[0-9;]*m/g, '').length;
}
