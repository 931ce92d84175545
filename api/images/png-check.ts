// checkPng is the gate between any generator and the store: the bytes must be a PNG of the album's size
// and within the byte limit, whatever the generator (a service may misbehave; so may a bug).
import sharp from 'sharp';
import { ImageGenerationError } from './image-generator.js';

const pngSignature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export async function checkPng(bytes: Buffer, widthPx: number, heightPx: number, bytesMax: number): Promise<void> {
  if (bytes.length > bytesMax) {
    throw new ImageGenerationError(
      `the image has ${bytes.length} bytes, over the limit of ${bytesMax}`,
      false,
      'IMAGE_TOO_LARGE',
    );
  }
  if (!bytes.subarray(0, 8).equals(pngSignature))
    throw new ImageGenerationError('the image is not a PNG', false, 'BAD_IMAGE');
  let size: { width: number; height: number };
  try {
    // A full decode, not just the header: a truncated or corrupt PNG is refused here, not shown to a client.
    size = (await sharp(bytes, { failOn: 'truncated' }).raw().toBuffer({ resolveWithObject: true })).info;
  } catch {
    throw new ImageGenerationError('the PNG cannot be decoded', false, 'BAD_IMAGE');
  }
  if (size.width !== widthPx || size.height !== heightPx) {
    throw new ImageGenerationError(
      `the image is ${size.width}x${size.height}, not ${widthPx}x${heightPx}`,
      false,
      'BAD_IMAGE',
    );
  }
}
