/** @cairn/ai-sdk: any AI SDK language model (specification v3) as a Cairn model. */
export { aiSdkModel } from './ai-sdk-model.js';
export type { AiSdkCallSettings, AiSdkModelOptions } from './ai-sdk-model.js';
