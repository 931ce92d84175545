// imageGeneratorFromEnv picks the album image generator: the built-in one unless SVC_IMAGE_GENERATOR=openai,
// which needs SVC_IMAGE_API_URL, SVC_IMAGE_API_KEY (or SVC_IMAGE_API_KEY_FILE) and optionally
// SVC_IMAGE_SERVICE (`openai`, the default: OpenAI's GPT image models; `localai`: LocalAI with Stable
// Diffusion), SVC_IMAGE_MODEL (default gpt-image-1, or stablediffusion for localai), SVC_IMAGE_EDIT_MODEL
// (default the model), SVC_IMAGE_QUALITY (gpt-image-1's quality, default auto) and SVC_IMAGE_TIMEOUT_MS. The
// key is never logged or echoed. Each variable's kind and default: ../env-settings.ts.
import { readFileSync } from 'node:fs';
import type { ImageGenerator } from './image-generator.js';
import { OpenAiImageGenerator } from './openai-generator.js';
import { ProceduralImageGenerator } from './procedural-generator.js';
import type { GptImageQuality, ImageServiceKind } from './image-service-contracts.js';
import { envSetting } from '../env-settings.js';

export const imageModelDefault = 'gpt-image-1';
export const localAiImageModelDefault = 'stablediffusion';

export function imageGeneratorFromEnv(env: NodeJS.ProcessEnv = process.env): ImageGenerator {
  const kind = envSetting<string>(env, 'SVC_IMAGE_GENERATOR');
  if (kind === 'builtin') return new ProceduralImageGenerator();
  const baseUrl = envSetting<string | undefined>(env, 'SVC_IMAGE_API_URL');
  const keyFile = envSetting<string | undefined>(env, 'SVC_IMAGE_API_KEY_FILE');
  const apiKey = keyFile
    ? readFileSync(keyFile, 'utf8').trim()
    : envSetting<string | undefined>(env, 'SVC_IMAGE_API_KEY');
  if (!baseUrl || !apiKey)
    throw new Error('SVC_IMAGE_GENERATOR=openai needs SVC_IMAGE_API_URL and SVC_IMAGE_API_KEY (or _FILE)');
  const timeoutMs = envSetting<number>(env, 'SVC_IMAGE_TIMEOUT_MS');
  const service = envSetting<ImageServiceKind>(env, 'SVC_IMAGE_SERVICE');
  const model =
    envSetting<string | undefined>(env, 'SVC_IMAGE_MODEL') ??
    (service === 'openai' ? imageModelDefault : localAiImageModelDefault);
  return new OpenAiImageGenerator({
    baseUrl,
    apiKey,
    model,
    service,
    editModel: envSetting<string | undefined>(env, 'SVC_IMAGE_EDIT_MODEL'),
    timeoutMs,
    quality: envSetting<GptImageQuality | undefined>(env, 'SVC_IMAGE_QUALITY'),
  });
}
