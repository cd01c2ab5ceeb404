/** @cairn/ai-sdk: any AI SDK language model (specification v3 or v4) as a Cairn model. */
export { aiSdkModel } from './ai-sdk-model.js';
export type {
  AiSdkCallSettings,
  AiSdkLanguageModel,
  AiSdkModelOptions,
  LanguageModelV4Compatible,
} from './ai-sdk-model.js';
