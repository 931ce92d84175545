// The request contracts of the two OpenAI-compatible image services the HTTP adapter speaks, each as its
// documentation states it. What a request may carry, and which sizes, differ between them; the adapter asks
// each for the supported size closest to the album's and resizes the answer to the album's exact size.
//
// `openai` — OpenAI's Images API with a GPT image model (gpt-image-1), as documented in the API reference and
//   the official SDK's generated types (openai/openai-node, src/resources/images.ts):
//   POST /v1/images/generations (JSON) and POST /v1/images/edits (multipart, the reference image as `image`).
//   size: 1024x1024, 1536x1024, 1024x1536 or auto; quality: low, medium, high or auto; background: transparent,
//   opaque or auto; output_format: png, jpeg or webp (output_compression only with jpeg or webp); n: 1-10.
//   No `response_format`: GPT image models always answer base64 (`data[].b64_json`) and refuse the parameter
//   (400 `unknown_parameter`). Errors: {error: {message, type, param, code}}.
// `localai` — LocalAI's OpenAI-compatible image endpoint with a Stable Diffusion backend (LocalAI docs,
//   features/image-generation; core/http/endpoints/openai/image.go): POST /v1/images/generations (JSON) only;
//   size "WxH" (any integers; diffusers needs both divisible by 8; Stable Diffusion draws best near 512 px);
//   `response_format: "b64_json"` for base64, else it answers a URL; `file` (base64) is the reference image of
//   an image-to-image model; a `|` in the prompt starts the negative prompt. Errors: {error: {code, message}}.

export const imageServiceKinds = ['openai', 'localai'] as const;
export type ImageServiceKind = (typeof imageServiceKinds)[number];

export const gptImageSizes = ['1024x1024', '1536x1024', '1024x1536'] as const;
export const gptImageQualities = ['low', 'medium', 'high', 'auto'] as const;
export type GptImageQuality = (typeof gptImageQualities)[number];

export interface ServiceSize {
  widthPx: number;
  heightPx: number;
  /** text is the `size` field: "1536x1024". */
  text: string;
}

const sizeOf = (widthPx: number, heightPx: number): ServiceSize => ({
  widthPx,
  heightPx,
  text: `${widthPx}x${heightPx}`,
});

/**
 * closestGptImageSize picks the GPT image size whose aspect ratio is closest to the album's (compared on a log
 * scale, so 2:1 is as far from 1:1 as 1:2). Never `auto`: the album's aspect is known, and auto may pick another.
 */
export function closestGptImageSize(widthPx: number, heightPx: number): ServiceSize {
  const wanted = Math.log(widthPx / heightPx);
  let best: ServiceSize = sizeOf(1024, 1024);
  for (const text of gptImageSizes) {
    const [width, height] = text.split('x').map(Number) as [number, number];
    if (Math.abs(Math.log(width / height) - wanted) < Math.abs(Math.log(best.widthPx / best.heightPx) - wanted)) {
      best = sizeOf(width, height);
    }
  }
  return best;
}

/** localAiSideStepPx: every side is a multiple of this (diffusers needs 8; latent models prefer 64). */
const localAiSideStepPx = 64;
/** localAiShortSidePx and localAiLongSidePxMax: Stable Diffusion's native resolution, and a cap on memory. */
const localAiShortSidePx = 512;
const localAiLongSidePxMax = 1024;

/**
 * closestLocalAiSize keeps the album's aspect ratio at Stable Diffusion's native scale: the short side 512 px,
 * the long side at most 1024 px, both rounded to a multiple of 64.
 */
export function closestLocalAiSize(widthPx: number, heightPx: number): ServiceSize {
  let scale = localAiShortSidePx / Math.min(widthPx, heightPx);
  scale = Math.min(scale, localAiLongSidePxMax / Math.max(widthPx, heightPx));
  const side = (px: number) =>
    Math.max(localAiSideStepPx, Math.round((px * scale) / localAiSideStepPx) * localAiSideStepPx);
  return sizeOf(side(widthPx), side(heightPx));
}

/** localAiPrompt keeps a subject's own `|` from starting LocalAI's negative prompt. */
export function localAiPrompt(prompt: string): string {
  return prompt.replace(/\|/g, '/');
}

/** isGptImageModel: the models whose contract the `openai` service follows. */
export function isGptImageModel(model: string): boolean {
  return /^gpt-image-/.test(model);
}
