// OpenAiImageGenerator speaks to an OpenAI-compatible image service: the anchor through
// `POST /v1/images/generations` (JSON: model, prompt, n, size, response_format), each shot through
// `POST /v1/images/edits` (multipart: the anchor PNG as `image`, model, prompt, n, size, response_format), so
// the service draws the shot from the anchor. The answer is `{data: [{b64_json}]}`; a `url` answer is not
// followed (it would make this process fetch an address chosen by the service). The key goes in
// `Authorization: Bearer` and is never logged or put in an error message. 429, 5xx, timeouts and network
// errors are retryable; other statuses are not. An answer of another size is resized to the asked size.
import sharp from 'sharp';
import type { AnchorRequest, ImageGenerator, ShotRequest } from './image-generator.js';
import { ImageGenerationError, anchorPrompt, shotPrompt } from './image-generator.js';
import { imageServiceResponseBytesMax, imageServiceTimeoutMsDefault } from '../albums/limits.js';

export interface OpenAiImageSettings {
  /** baseUrl is the service root, without /v1 (e.g. https://images.example). */
  baseUrl: string;
  apiKey: string;
  model: string;
  timeoutMs?: number;
}

interface ImagesAnswer {
  data?: Array<{ b64_json?: unknown; url?: unknown }>;
  error?: { message?: unknown };
}

export class OpenAiImageGenerator implements ImageGenerator {
  readonly name = 'openai';
  private readonly timeoutMs: number;

  constructor(private readonly settings: OpenAiImageSettings) {
    if (!/^https?:\/\//.test(settings.baseUrl)) throw new Error('the image service URL must start with http:// or https://');
    this.timeoutMs = settings.timeoutMs ?? imageServiceTimeoutMsDefault;
  }

  async generateAnchor(request: AnchorRequest): Promise<Buffer> {
    const body = JSON.stringify({
      model: this.settings.model, prompt: anchorPrompt(request.subject, request.seed), n: 1,
      size: `${request.widthPx}x${request.heightPx}`, response_format: 'b64_json',
    });
    const png = await this.call('/v1/images/generations', body, { 'content-type': 'application/json' });
    return fitSize(png, request.widthPx, request.heightPx);
  }

  async generateShot(request: ShotRequest): Promise<Buffer> {
    const form = new FormData();
    form.append('image', new Blob([request.anchorPng], { type: 'image/png' }), 'anchor.png');
    form.append('model', this.settings.model);
    form.append('prompt', shotPrompt(request.subject, request.direction, request.variation));
    form.append('n', '1');
    form.append('size', `${request.widthPx}x${request.heightPx}`);
    form.append('response_format', 'b64_json');
    const png = await this.call('/v1/images/edits', form, {});
    return fitSize(png, request.widthPx, request.heightPx);
  }

  private async call(path: string, body: string | FormData, headers: Record<string, string>): Promise<Buffer> {
    const url = this.settings.baseUrl.replace(/\/+$/, '') + path;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST', body, headers: { ...headers, authorization: `Bearer ${this.settings.apiKey}` },
        signal: AbortSignal.timeout(this.timeoutMs), redirect: 'error',
      });
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      throw new ImageGenerationError(timedOut ? `the image service did not answer within ${this.timeoutMs} ms`
        : 'the image service could not be reached', true, 'SERVICE_UNAVAILABLE');
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
      throw new ImageGenerationError(`the image service answered ${response.status}${reason}`, retryable,
        retryable ? 'SERVICE_UNAVAILABLE' : 'SERVICE_REFUSED');
    }
    const encoded = answer.data?.[0]?.b64_json;
    if (typeof encoded !== 'string' || encoded.length === 0) {
      throw new ImageGenerationError('the image service answered without data[0].b64_json', false, 'BAD_SERVICE_ANSWER');
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
    if (total > bytesMax) throw new ImageGenerationError(`the image service's answer is over ${bytesMax} bytes`, false, 'BAD_SERVICE_ANSWER');
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
    throw new ImageGenerationError('the image service answered with data that is not an image', false, 'BAD_SERVICE_ANSWER');
  }
}
