/** @cairn/ai-sdk: any AI SDK language model (specification v3 or v4) as a Cairn model. */
export { aiSdkModel } from './ai-sdk-model.js';
export type {
  AiSdkCallSettings,
  AiSdkLanguageModel,
  AiSdkModelOptions,
  LanguageModelV4Compatible,
} from './ai-sdk-model.js';
export { uiMessageStreamResponse, UIMessageMapper, visibleParts } from './ui-message-stream.js';
export type {
  SupersededData,
  UIMessageChunk,
  UIMessageStreamOptions,
} from './ui-message-stream.js';
export { cairnChatTransport } from './chat-transport.js';
export type {
  CairnChatTransport,
  CairnChatTransportOptions,
  PositionStorage,
} from './chat-transport.js';
