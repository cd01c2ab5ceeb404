import type { RunEvent, StreamChunk } from '@cairn/sdk';
import { describe, expectTypeOf, it } from 'vitest';
import type * as Page from './browser/api-types.js';
import type { ChildRunView, RunDetail, RunSummary } from './run-views.js';

// Checked by the type checker (`pnpm typecheck`), not at run time: the page's API types are written out in
// browser/api-types.ts (the page is type-checked without Node, and the sdk's source needs it), and these say that
// what the server sends is what the page reads. A change to the sdk's types fails here until the page follows.
describe("the page's API types", () => {
  it('are the sdk’s events and stream chunks exactly', () => {
    expectTypeOf<Page.RunEvent>().toEqualTypeOf<RunEvent>();
    expectTypeOf<Page.StreamChunk>().toEqualTypeOf<StreamChunk>();
  });

  it('are what the server’s run views hold', () => {
    expectTypeOf<RunSummary>().toExtend<Page.RunSummary>();
    expectTypeOf<RunDetail>().toExtend<Page.RunDetail>();
    expectTypeOf<ChildRunView>().toEqualTypeOf<Page.ChildRunView>();
  });
});
