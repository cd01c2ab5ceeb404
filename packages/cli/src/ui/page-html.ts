import { createHash } from 'node:crypto';
import { domScript } from './dom-script.js';
import { pageScript } from './page-script.js';
import { pageStyle } from './page-style.js';
import { planScript } from './plan-script.js';
import { timelineScript } from './timeline-script.js';

/** The page's one script: the helpers first, the application (which starts at once) last. */
export const pageScriptText = `(function () {\n'use strict';\n${domScript}${timelineScript}${planScript}${pageScript}})();\n`;

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * The page's Content-Security-Policy: only its own inline script and style (named by their hashes) run, and it
 * talks only to its own origin. Data is never put into the page as HTML, and this is the second line: markup
 * that got in anyway could run no script and load nothing.
 */
export const pageCsp = [
  "default-src 'none'",
  `script-src ${sha256(pageScriptText)}`,
  `style-src ${sha256(pageStyle)}`,
  // Bars are placed through `element.style` (the CSS object model), which CSP does not count as inline style.
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The whole page: markup, style and script in one document, so `cairn ui` serves no other file. */
export const pageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cairn runs</title>
<link rel="icon" href="data:,">
<style>${pageStyle}</style>
</head>
<body>
<header class="top"><a href="#/">Cairn</a><span class="where" id="where"></span></header>
<main id="view"></main>
<script>${pageScriptText}</script>
</body>
</html>
`;
