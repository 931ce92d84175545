// Raster: an RGBA image in memory, and the few pixel operations the built-in generator does itself (crop
// with transparent padding, alpha compositing, bounding box, per-pixel colour). Resampling, rotation and
// encoding are left to sharp. Sharp applies its operations in a fixed order whatever the call order, so each
// sharp step here is its own pipeline from raw to raw.
import sharp from 'sharp';
import type { Sharp } from 'sharp';

export interface Raster {
  width: number;
  height: number;
  /** data is RGBA, 4 bytes per pixel, rows top to bottom. */
  data: Buffer;
}

export type Rgb = [number, number, number];

export function blankRaster(width: number, height: number): Raster {
  return { width, height, data: Buffer.alloc(width * height * 4) };
}

export async function decodeRaster(image: Buffer | Sharp): Promise<Raster> {
  const pipeline = Buffer.isBuffer(image) ? sharp(image) : image;
  const { data, info } = await pipeline.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data };
}

export function rasterPipeline(raster: Raster): Sharp {
  return sharp(raster.data, { raw: { width: raster.width, height: raster.height, channels: 4 } });
}

export async function resizeRaster(raster: Raster, width: number, height: number): Promise<Raster> {
  return decodeRaster(rasterPipeline(raster).resize(width, height, { fit: 'fill' }));
}

const transparent = { r: 0, g: 0, b: 0, alpha: 0 };

export async function rotateRaster(raster: Raster, degrees: number): Promise<Raster> {
  if (degrees === 0) return raster;
  return decodeRaster(rasterPipeline(raster).rotate(degrees, { background: transparent }));
}

export async function affineRaster(raster: Raster, matrix: [number, number, number, number]): Promise<Raster> {
  if (matrix[0] === 1 && matrix[1] === 0 && matrix[2] === 0 && matrix[3] === 1) return raster;
  return decodeRaster(rasterPipeline(raster).affine(matrix, { background: transparent, interpolator: 'bicubic' }));
}

export async function mirrorRaster(raster: Raster): Promise<Raster> {
  return decodeRaster(rasterPipeline(raster).flop());
}

export async function blurRaster(raster: Raster, sigma: number): Promise<Raster> {
  return decodeRaster(rasterPipeline(raster).blur(sigma));
}

/** crop copies the rectangle at (left, top); parts outside the source come out transparent. */
export function cropRaster(source: Raster, left: number, top: number, width: number, height: number): Raster {
  const out = blankRaster(width, height);
  const fromX = Math.max(0, -left);
  const toX = Math.min(width, source.width - left);
  if (toX <= fromX) return out;
  for (let y = Math.max(0, -top); y < Math.min(height, source.height - top); y++) {
    const sourceStart = ((y + top) * source.width + left + fromX) * 4;
    source.data.copy(out.data, (y * width + fromX) * 4, sourceStart, sourceStart + (toX - fromX) * 4);
  }
  return out;
}

export interface Placement {
  /** left and top place the layer's top-left corner on the base (may be outside it). */
  left: number;
  top: number;
  opacity?: number;
  /** fadeDown makes opacity fall to zero from the layer's top to its bottom (a reflection). */
  fadeDown?: boolean;
}

/** drawOver alpha-composites layer onto base (source-over), clipped to the base. */
export function drawOver(base: Raster, layer: Raster, placement: Placement): void {
  const opacity = placement.opacity ?? 1;
  for (let y = 0; y < layer.height; y++) {
    const baseY = y + placement.top;
    if (baseY < 0 || baseY >= base.height) continue;
    const rowOpacity = placement.fadeDown ? opacity * (1 - y / layer.height) : opacity;
    for (let x = 0; x < layer.width; x++) {
      const baseX = x + placement.left;
      if (baseX < 0 || baseX >= base.width) continue;
      const from = (y * layer.width + x) * 4;
      const alpha = (layer.data[from + 3]! / 255) * rowOpacity;
      if (alpha <= 0) continue;
      const to = (baseY * base.width + baseX) * 4;
      const baseAlpha = base.data[to + 3]! / 255;
      const outAlpha = alpha + baseAlpha * (1 - alpha);
      for (let channel = 0; channel < 3; channel++) {
        const mixed =
          (layer.data[from + channel]! * alpha + base.data[to + channel]! * baseAlpha * (1 - alpha)) / outAlpha;
        base.data[to + channel] = Math.round(mixed);
      }
      base.data[to + 3] = Math.round(outAlpha * 255);
    }
  }
}

/** alphaBox is the smallest rectangle holding every pixel more opaque than alphaMin, or null when none is. */
export function alphaBox(
  raster: Raster,
  alphaMin = 8,
): { left: number; top: number; width: number; height: number } | null {
  let left = raster.width;
  let top = raster.height;
  let right = -1;
  let bottom = -1;
  for (let y = 0; y < raster.height; y++) {
    for (let x = 0; x < raster.width; x++) {
      if (raster.data[(y * raster.width + x) * 4 + 3]! <= alphaMin) continue;
      if (x < left) left = x;
      if (x > right) right = x;
      if (y < top) top = y;
      if (y > bottom) bottom = y;
    }
  }
  return right < 0 ? null : { left, top, width: right - left + 1, height: bottom - top + 1 };
}

/** mapColours replaces the colour of every visible pixel with paint(x, y, rgb); alpha stays. */
export function mapColours(raster: Raster, paint: (x: number, y: number, rgb: Rgb) => Rgb): void {
  const rgb: Rgb = [0, 0, 0];
  for (let y = 0; y < raster.height; y++) {
    for (let x = 0; x < raster.width; x++) {
      const at = (y * raster.width + x) * 4;
      if (raster.data[at + 3] === 0) continue;
      rgb[0] = raster.data[at]!;
      rgb[1] = raster.data[at + 1]!;
      rgb[2] = raster.data[at + 2]!;
      const out = paint(x, y, rgb);
      for (let channel = 0; channel < 3; channel++)
        raster.data[at + channel] = Math.max(0, Math.min(255, Math.round(out[channel]!)));
    }
  }
}

/** encodePng writes the raster as an opaque (RGB) or RGBA PNG, with settings fixed so equal pixels give equal bytes. */
export async function encodePng(raster: Raster, opaque: boolean): Promise<Buffer> {
  const pipeline = rasterPipeline(raster);
  return (opaque ? pipeline.removeAlpha() : pipeline)
    .png({ compressionLevel: 9, adaptiveFiltering: false, palette: false })
    .toBuffer();
}
