// ImageGenerator makes album images: the anchor from the subject description, and each shot from the anchor
// plus its direction, so every shot shows the same subject. Implementations: the built-in procedural one
// (procedural-generator.ts, the default) and an OpenAI-compatible HTTP service (openai-generator.ts).
import type { ShotDirection } from '../albums/templates.js';

export interface AnchorRequest {
  subject: string;
  /** seed picks one of many anchors for the same subject. */
  seed: number;
  widthPx: number;
  heightPx: number;
}

export interface ShotRequest {
  /** anchorPng is the anchor image, as fetched from the album's AnchorURL. */
  anchorPng: Buffer;
  subject: string;
  direction: ShotDirection;
  /** variation picks another take of the same shot. */
  variation: number;
  widthPx: number;
  heightPx: number;
}

export interface ImageGenerator {
  /** name identifies the generator in logs and events. */
  readonly name: string;
  /** generateAnchor resolves with a PNG of widthPx x heightPx. */
  generateAnchor(request: AnchorRequest): Promise<Buffer>;
  /** generateShot resolves with a PNG of widthPx x heightPx. */
  generateShot(request: ShotRequest): Promise<Buffer>;
}

/**
 * ImageGenerationError is a failure a generator understands: `retryable` says whether trying again may
 * help (a timeout, a 429 or a 5xx) or not (a refused prompt, a bad image). Other errors count as retryable.
 */
export class ImageGenerationError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly code = 'GENERATION_FAILED',
  ) {
    super(message);
    this.name = 'ImageGenerationError';
  }
}

/** shotPrompt is the text an image service receives for a shot: the subject, then the direction. */
export function shotPrompt(subject: string, direction: ShotDirection, variation: number): string {
  const take = variation > 0 ? ` Take ${variation + 1}.` : '';
  return (
    `${subject.trim()}\nShot "${direction.name}": ${direction.framing} framing, ${direction.angle} angle, ` +
    `${direction.lighting} lighting, ${direction.pose}, ${direction.background} background. Keep the subject ` +
    `exactly as in the reference image.${take}`
  );
}

/** anchorPrompt is the text an image service receives for the anchor. */
export function anchorPrompt(subject: string, seed: number): string {
  const take = seed > 0 ? ` Variant ${seed}.` : '';
  return (
    `${subject.trim()}\nReference image: the subject alone, whole, front view, even studio light, plain ` +
    `background.${take}`
  );
}
