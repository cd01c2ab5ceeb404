/**
 * @cairn/ai-sdk/client: what a page in a browser needs to show a Cairn run in `useChat`, and nothing of the
 * server (no `@cairn/sdk`, no Node module), so any bundler takes it as it is.
 */
export { cairnChatTransport } from './chat-transport.js';
export type {
  CairnChatTransport,
  CairnChatTransportOptions,
  PositionStorage,
} from './chat-transport.js';
export { visibleParts } from './ui-parts.js';
export type { SupersededData, UIMessageChunk } from './ui-parts.js';
