// OpenAiImageGenerator speaks to an OpenAI-compatible image service, following the documented contract of the
// service it is configured for (image-service-contracts.ts):
// - `openai` (GPT image models, gpt-image-1): the anchor through `POST /v1/images/generations` (JSON: model,
//   prompt, n, size, quality, background, output_format), each shot through `POST /v1/images/edits` (multipart:
//   the anchor PNG as `image` and the same fields), so the service draws the shot from the anchor. No
//   `response_format`: these models always answer base64 and refuse the parameter.
// - `localai` (LocalAI with a Stable Diffusion backend): both through `POST /v1/images/generations` (JSON:
//   model, prompt, n, size, `response_format: "b64_json"`); a shot sends the anchor as `file` (base64) to the
//   image-to-image model (`editModel`).
// Either asks for the supported size closest to the album's and resizes the answer to the album's exact size.
// The answer is `{data: [{b64_json}]}`; a `url` answer is not followed (it would make this process fetch an
// address chosen by the service). The key goes in `Authorization: Bearer` and is never logged or put in an
// error message. 429, 5xx, timeouts and network errors are retryable; other statuses are not.
import sharp from 'sharp';
import type { AnchorRequest, ImageGenerator, ShotRequest } from './image-generator.js';
import { ImageGenerationError, anchorPrompt, shotPrompt } from './image-generator.js';
import { imageServiceResponseBytesMax, imageServiceTimeoutMsDefault } from '../albums/limits.js';
import type { GptImageQuality, ImageServiceKind, ServiceSize } from './image-service-contracts.js';
import {
  closestGptImageSize,
  closestLocalAiSize,
  gptImageQualities,
  isGptImageModel,
  localAiPrompt,
} from './image-service-contracts.js';

export interface OpenAiImageSettings {
  /** baseUrl is the service root, without /v1 (e.g. https://images.example). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** service is whose contract to follow; default `openai`. */
  service?: ImageServiceKind;
  /** editModel draws shots from the anchor (LocalAI: an image-to-image model); default `model`. */
  editModel?: string;
  /** quality is gpt-image-1's `quality`; default `auto`. */
  quality?: GptImageQuality;
  timeoutMs?: number;
}

interface ImagesAnswer {
  data?: Array<{ b64_json?: unknown; url?: unknown }>;
  error?: { message?: unknown };
}

export class OpenAiImageGenerator implements ImageGenerator {
  readonly name: string;
  private readonly timeoutMs: number;
  private readonly service: ImageServiceKind;
  private readonly quality: GptImageQuality;

  constructor(private readonly settings: OpenAiImageSettings) {
    if (!/^https?:\/\//.test(settings.baseUrl))
      throw new Error('the image service URL must start with http:// or https://');
    this.service = settings.service ?? 'openai';
    this.quality = settings.quality ?? 'auto';
    if (this.service === 'openai' && !isGptImageModel(settings.model)) {
      // dall-e models take other sizes and parameters, answer URLs by default and (dall-e-3) cannot edit.
      throw new Error(
        `the openai image service is used with GPT image models (gpt-image-1), not ${JSON.stringify(settings.model)}`,
      );
    }
    if (!gptImageQualities.includes(this.quality))
      throw new Error(`image quality must be one of ${gptImageQualities.join(', ')}`);
    this.name = this.service;
    this.timeoutMs = settings.timeoutMs ?? imageServiceTimeoutMsDefault;
  }

  /** serviceSize is the size this service is asked for: the supported one closest to the album's. */
  serviceSize(widthPx: number, heightPx: number): ServiceSize {
    return this.service === 'openai' ? closestGptImageSize(widthPx, heightPx) : closestLocalAiSize(widthPx, heightPx);
  }

  async generateAnchor(request: AnchorRequest): Promise<Buffer> {
    const size = this.serviceSize(request.widthPx, request.heightPx).text;
    const prompt = anchorPrompt(request.subject, request.seed);
    const fields =
      this.service === 'openai'
        ? { model: this.settings.model, prompt, n: 1, size, ...this.gptImageOptions() }
        : { model: this.settings.model, prompt: localAiPrompt(prompt), n: 1, size, response_format: 'b64_json' };
    const png = await this.call('/v1/images/generations', JSON.stringify(fields), {
      'content-type': 'application/json',
    });
    return fitSize(png, request.widthPx, request.heightPx);
  }

  async generateShot(request: ShotRequest): Promise<Buffer> {
    const size = this.serviceSize(request.widthPx, request.heightPx).text;
    const prompt = shotPrompt(request.subject, request.direction, request.variation);
    const model = this.settings.editModel ?? this.settings.model;
    let png: Buffer;
    if (this.service === 'openai') {
      const form = new FormData();
      form.append('image', new Blob([request.anchorPng], { type: 'image/png' }), 'anchor.png');
      for (const [name, value] of Object.entries({ model, prompt, n: 1, size, ...this.gptImageOptions() })) {
        form.append(name, String(value));
      }
      png = await this.call('/v1/images/edits', form, {});
    } else {
      const fields = {
        model,
        prompt: localAiPrompt(prompt),
        n: 1,
        size,
        response_format: 'b64_json',
        file: request.anchorPng.toString('base64'),
      };
      png = await this.call('/v1/images/generations', JSON.stringify(fields), { 'content-type': 'application/json' });
    }
    return fitSize(png, request.widthPx, request.heightPx);
  }

  /** gptImageOptions: an opaque PNG (albums put the subject on a plain background and store PNGs). */
  private gptImageOptions(): Record<string, string> {
    return { quality: this.quality, background: 'opaque', output_format: 'png' };
  }

  private async call(path: string, body: string | FormData, headers: Record<string, string>): Promise<Buffer> {
    const url = this.settings.baseUrl.replace(/\/+$/, '') + path;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        body,
        headers: { ...headers, authorization: `Bearer ${this.settings.apiKey}` },
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      throw new ImageGenerationError(
        timedOut
          ? `the image service did not answer within ${this.timeoutMs} ms`
          : 'the image service could not be reached',
        true,
        'SERVICE_UNAVAILABLE',
      );
    }
    const text = await readBounded(response, imageServiceResponseBytesMax);
    let answer: ImagesAnswer = {};
    try {
      answer = JSON.parse(text) as ImagesAnswer;
    } catch {
      // Not JSON: judged by its status below.
    }
    if (!response.ok) {
      const retryable = response.status === 429 || response.status >= 500;
      const reason = typeof answer.error?.message === 'string' ? `: ${answer.error.message.slice(0, 300)}` : '';
      throw new ImageGenerationError(
        `the image service answered ${response.status}${reason}`,
        retryable,
        retryable ? 'SERVICE_UNAVAILABLE' : 'SERVICE_REFUSED',
      );
    }
    const encoded = answer.data?.[0]?.b64_json;
    if (typeof encoded !== 'string' && typeof answer.data?.[0]?.url === 'string') {
      throw new ImageGenerationError(
        'the image service answered a URL, not b64_json; it is not followed',
        false,
        'BAD_SERVICE_ANSWER',
      );
    }
    if (typeof encoded !== 'string' || encoded.length === 0) {
      throw new ImageGenerationError(
        'the image service answered without data[0].b64_json',
        false,
        'BAD_SERVICE_ANSWER',
      );
    }
    return Buffer.from(encoded, 'base64');
  }
}

async function readBounded(response: Response, bytesMax: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > bytesMax) {
    await response.body?.cancel();
    throw new ImageGenerationError(`the image service's answer is over ${bytesMax} bytes`, false, 'BAD_SERVICE_ANSWER');
  }
  const parts: Buffer[] = [];
  let total = 0;
  if (!response.body) return '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    total += chunk.length;
    if (total > bytesMax)
      throw new ImageGenerationError(
        `the image service's answer is over ${bytesMax} bytes`,
        false,
        'BAD_SERVICE_ANSWER',
      );
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts).toString('utf8');
}

/** fitSize checks the service's image is a readable image and makes it a PNG of exactly the asked size. */
async function fitSize(image: Buffer, widthPx: number, heightPx: number): Promise<Buffer> {
  try {
    const meta = await sharp(image).metadata();
    if (meta.format === 'png' && meta.width === widthPx && meta.height === heightPx) return image;
    return await sharp(image).resize(widthPx, heightPx, { fit: 'cover' }).png().toBuffer();
  } catch {
    throw new ImageGenerationError(
      'the image service answered with data that is not an image',
      false,
      'BAD_SERVICE_ANSWER',
    );
  }
}
