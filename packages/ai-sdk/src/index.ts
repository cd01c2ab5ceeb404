/** @cairn/ai-sdk: any AI SDK language model (specification v3 or v4) as a Cairn model. */
export { aiSdkModel } from './ai-sdk-model.js';
export type {
  AiSdkCallSettings,
  AiSdkLanguageModel,
  AiSdkModelOptions,
  LanguageModelV4Compatible,
} from './ai-sdk-model.js';
export { uiMessageStreamResponse, UIMessageMapper } from './ui-message-stream.js';
export type { UIMessageStreamOptions } from './ui-message-stream.js';
// What a page uses, also on its own (nothing of the server in it) as `@cairn/ai-sdk/client`.
export * from './client.js';
