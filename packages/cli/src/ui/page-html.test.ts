import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pageCsp, pageHtml, pageScriptText } from './page-html.js';
import { pageStyle } from './page-style.js';

const hash = (text: string) => createHash('sha256').update(text).digest('base64');

describe('the page', () => {
  it('has a script that parses as plain browser JavaScript', () => {
    // The script is a string no compiler sees: a syntax error would only show in a browser.
    expect(() => new Function(pageScriptText)).not.toThrow();
  });

  it('lets only its own inline script and style run, by their hashes', () => {
    expect(pageHtml).toContain(`<script>${pageScriptText}</script>`);
    expect(pageHtml).toContain(`<style>${pageStyle}</style>`);
    expect(pageCsp).toContain(`script-src 'sha256-${hash(pageScriptText)}'`);
    expect(pageCsp).toContain(`style-src 'sha256-${hash(pageStyle)}'`);
    expect(pageCsp).toContain("default-src 'none'");
  });

  it('never writes HTML from data', () => {
    expect(pageScriptText).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });
});
