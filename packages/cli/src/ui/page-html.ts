import { createHash } from 'node:crypto';
import { pageStyle } from './page-style.js';

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** Where the page's script is: its modules bundled into one (`page-bundle.ts`). */
export const pageEntry = '/ui/page.js';

/**
 * The page's Content-Security-Policy: only scripts of its own origin (its bundled script, no inline script) and its own
 * inline style (named by its hash) run, and it talks only to its own origin. Data is never put into the page as
 * HTML, and this is the second line: markup that got in anyway could run no script and load nothing.
 */
export const pageCsp = [
  "default-src 'none'",
  "script-src 'self'",
  `style-src ${sha256(pageStyle)}`,
  // Bars are placed through `element.style` (the CSS object model), which CSP does not count as inline style.
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The page: markup and style, and its script. */
export const pageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cairn runs</title>
<link rel="icon" href="data:,">
<style>${pageStyle}</style>
<script type="module" src="${pageEntry}"></script>
</head>
<body>
<header class="top"><a href="#/">Cairn</a><span class="where" id="where"></span></header>
<main id="view"></main>
</body>
</html>
`;
