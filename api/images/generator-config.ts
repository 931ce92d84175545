// imageGeneratorFromEnv picks the album image generator: the built-in one unless SVC_IMAGE_GENERATOR=openai,
// which needs SVC_IMAGE_API_URL, SVC_IMAGE_API_KEY (or SVC_IMAGE_API_KEY_FILE) and optionally
// SVC_IMAGE_SERVICE (`openai`, the default: OpenAI's GPT image models; `localai`: LocalAI with Stable
// Diffusion), SVC_IMAGE_MODEL (default gpt-image-1, or stablediffusion for localai), SVC_IMAGE_EDIT_MODEL
// (default the model), SVC_IMAGE_QUALITY (gpt-image-1's quality, default auto) and SVC_IMAGE_TIMEOUT_MS. The
// key is never logged or echoed.
import { readFileSync } from 'node:fs';
import type { ImageGenerator } from './image-generator.js';
import { OpenAiImageGenerator } from './openai-generator.js';
import { ProceduralImageGenerator } from './procedural-generator.js';
import { imageServiceTimeoutMsDefault } from '../albums/limits.js';
import type { GptImageQuality, ImageServiceKind } from './image-service-contracts.js';
import { imageServiceKinds } from './image-service-contracts.js';

export const imageModelDefault = 'gpt-image-1';
export const localAiImageModelDefault = 'stablediffusion';

export function imageGeneratorFromEnv(env: NodeJS.ProcessEnv = process.env): ImageGenerator {
  const kind = env.SVC_IMAGE_GENERATOR ?? 'builtin';
  if (kind === 'builtin') return new ProceduralImageGenerator();
  if (kind !== 'openai') throw new Error(`SVC_IMAGE_GENERATOR must be builtin or openai, got ${JSON.stringify(kind)}`);
  const baseUrl = env.SVC_IMAGE_API_URL;
  const apiKey = env.SVC_IMAGE_API_KEY_FILE
    ? readFileSync(env.SVC_IMAGE_API_KEY_FILE, 'utf8').trim()
    : env.SVC_IMAGE_API_KEY;
  if (!baseUrl || !apiKey)
    throw new Error('SVC_IMAGE_GENERATOR=openai needs SVC_IMAGE_API_URL and SVC_IMAGE_API_KEY (or _FILE)');
  const timeoutMs = env.SVC_IMAGE_TIMEOUT_MS ? Number(env.SVC_IMAGE_TIMEOUT_MS) : imageServiceTimeoutMsDefault;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new Error('SVC_IMAGE_TIMEOUT_MS must be a positive integer');
  const service = (env.SVC_IMAGE_SERVICE ?? 'openai') as ImageServiceKind;
  if (!imageServiceKinds.includes(service)) {
    throw new Error(`SVC_IMAGE_SERVICE must be one of ${imageServiceKinds.join(', ')}, got ${JSON.stringify(service)}`);
  }
  const model = env.SVC_IMAGE_MODEL ?? (service === 'openai' ? imageModelDefault : localAiImageModelDefault);
  return new OpenAiImageGenerator({
    baseUrl,
    apiKey,
    model,
    service,
    editModel: env.SVC_IMAGE_EDIT_MODEL,
    timeoutMs,
    quality: env.SVC_IMAGE_QUALITY as GptImageQuality | undefined,
  });
}
