// The built-in ImageGenerator: real PNGs without any service. The anchor is a drawing of the kind of thing the
// subject names (anchor-drawing.ts, subject-kinds.ts) on a transparent background. A shot is made from the anchor's pixels only: framed
// (cropped around the subject's bounding box), turned (squeeze, shear, mirror, tilt), arranged (pair, trio,
// reflection), lit (brightness, contrast, saturation, tint, a key light's shading, a rim glow) and put on its
// background with a floor shadow, so every shot shows the very same subject. It is deterministic: the same
// inputs give the same bytes (sharp's resampling and PNG encoding with fixed settings, no clock, no random).
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import type { AnchorRequest, ImageGenerator, ShotRequest } from './image-generator.js';
import { ImageGenerationError } from './image-generator.js';
import { anchorSvg } from './anchor-drawing.js';
import { closeUpFocus, subjectKindOf } from './subject-kinds.js';
import type { Angle, Arrangement, Background, Framing, Lighting } from './direction-vocabulary.js';
import { shotRecipe } from './direction-vocabulary.js';
import type { Raster, Rgb } from './raster.js';
import {
  affineRaster,
  alphaBox,
  blankRaster,
  blurRaster,
  cropRaster,
  decodeRaster,
  drawOver,
  encodePng,
  mapColours,
  mirrorRaster,
  resizeRaster,
  rotateRaster,
} from './raster.js';

export class ProceduralImageGenerator implements ImageGenerator {
  readonly name = 'builtin';

  async generateAnchor(request: AnchorRequest): Promise<Buffer> {
    const svg = anchorSvg(request.subject, request.seed, request.widthPx, request.heightPx);
    const raster = await decodeRaster(
      sharp(Buffer.from(svg)).resize(request.widthPx, request.heightPx, { fit: 'fill' }),
    );
    return encodePng(raster, false);
  }

  async generateShot(request: ShotRequest): Promise<Buffer> {
    let anchor: Raster;
    try {
      anchor = await decodeRaster(request.anchorPng);
    } catch (error) {
      throw new ImageGenerationError(
        `the anchor is not a readable image: ${(error as Error).message}`,
        false,
        'BAD_ANCHOR',
      );
    }
    const recipe = shotRecipe(request.direction);
    const jitter = variationJitter(request.variation, request.direction.name);
    const { widthPx, heightPx } = request;

    let subject = await frame(anchor, recipe.framing, closeUpFocus(subjectKindOf(request.subject)), widthPx, heightPx);
    subject = await turn(subject, recipe.angle, widthPx, heightPx);
    subject = await arrange(subject, recipe.arrangement, jitter.rotateDeg, jitter.shiftX, widthPx, heightPx);
    light(subject, recipe.lighting, recipe.angle.fromBehind, jitter.brightness);

    const out = backdrop(recipe.background, widthPx, heightPx);
    if (recipe.lighting.rim) drawOver(out, await rimGlow(subject), { left: 0, top: 0, opacity: 0.9 });
    const box = alphaBox(subject);
    if (box && recipe.framing.heightOfSubject >= 1 && box.top + box.height < heightPx - 2) floorShadow(out, box);
    drawOver(out, subject, { left: 0, top: 0 });
    return encodePng(out, true);
  }
}

/** variationJitter turns a variation number into a small, repeatable change of pose and light (none for 0). */
function variationJitter(
  variation: number,
  shotName: string,
): { rotateDeg: number; shiftX: number; brightness: number } {
  if (variation === 0) return { rotateDeg: 0, shiftX: 0, brightness: 1 };
  const bytes = createHash('sha256').update(`${variation}\n${shotName}`).digest();
  const spread = (byte: number) => (byte / 255) * 2 - 1;
  return {
    rotateDeg: spread(bytes[0]!) * 4,
    shiftX: spread(bytes[1]!) * 0.04,
    brightness: 1 + spread(bytes[2]!) * 0.06,
  };
}

/**
 * frame crops the anchor around its subject as the framing says, scaled to the output size. A framing tighter
 * than the whole subject centres on the subject kind's focus (an animal's head, a car's front) when it has one.
 */
async function frame(
  anchor: Raster,
  framing: Framing,
  focus: { x: number; y: number } | null,
  widthPx: number,
  heightPx: number,
): Promise<Raster> {
  const box = alphaBox(anchor) ?? { left: 0, top: 0, width: anchor.width, height: anchor.height };
  const aspect = widthPx / heightPx;
  // Wide framings must hold the subject's whole width too.
  const regionHeight = Math.max(
    2,
    framing.heightOfSubject * box.height,
    framing.heightOfSubject >= 1 ? (framing.heightOfSubject * box.width) / aspect : 0,
  );
  const regionWidth = Math.max(2, regionHeight * aspect);
  const close = framing.heightOfSubject < 1 && focus !== null;
  const centreX = box.left + (close ? focus.x : 0.5) * box.width;
  const centreY = box.top + (close ? focus.y : framing.centreFromTop) * box.height;
  const region = cropRaster(
    anchor,
    Math.round(centreX - regionWidth / 2),
    Math.round(centreY - regionHeight / 2),
    Math.round(regionWidth),
    Math.round(regionHeight),
  );
  return resizeRaster(region, widthPx, heightPx);
}

/** placeCentred puts a layer on a transparent canvas of the output size, centred, then shifted by (shiftX, shiftY). */
function placeCentred(layer: Raster, widthPx: number, heightPx: number, shiftX = 0, shiftY = 0): Raster {
  const canvas = blankRaster(widthPx, heightPx);
  drawOver(canvas, layer, {
    left: Math.round((widthPx - layer.width) / 2 + shiftX),
    top: Math.round((heightPx - layer.height) / 2 + shiftY),
  });
  return canvas;
}

async function turn(subject: Raster, angle: Angle, widthPx: number, heightPx: number): Promise<Raster> {
  let layer = angle.mirror ? await mirrorRaster(subject) : subject;
  layer = await affineRaster(layer, [angle.scaleX, angle.shearX, 0, angle.scaleY]);
  layer = await rotateRaster(layer, angle.rotateDeg);
  if (layer.width > widthPx * 1.5 || layer.height > heightPx * 1.5) {
    layer = await resizeRaster(layer, Math.min(layer.width, widthPx * 2), Math.min(layer.height, heightPx * 2));
  }
  return placeCentred(layer, widthPx, heightPx);
}

async function arrange(
  subject: Raster,
  arrangement: Arrangement,
  jitterDeg: number,
  jitterShift: number,
  widthPx: number,
  heightPx: number,
): Promise<Raster> {
  const tilt = { tilted: -8, leap: 10 }[arrangement as 'tilted' | 'leap'] ?? 0;
  const turned = await rotateRaster(subject, tilt + jitterDeg);
  const shiftX = jitterShift * widthPx;
  const scaled = async (factor: number) =>
    resizeRaster(
      turned,
      Math.max(1, Math.round(turned.width * factor)),
      Math.max(1, Math.round(turned.height * factor)),
    );
  switch (arrangement) {
    case 'single':
    case 'tilted':
      return placeCentred(turned, widthPx, heightPx, shiftX);
    case 'leap':
      return placeCentred(turned, widthPx, heightPx, shiftX, -0.08 * heightPx);
    case 'pair': {
      const small = await scaled(0.78);
      const canvas = placeCentred(small, widthPx, heightPx, shiftX - 0.22 * widthPx);
      drawOver(canvas, placeCentred(small, widthPx, heightPx, shiftX + 0.22 * widthPx), { left: 0, top: 0 });
      return canvas;
    }
    case 'trio': {
      const small = await scaled(0.64);
      const canvas = placeCentred(small, widthPx, heightPx, shiftX - 0.28 * widthPx, -0.04 * heightPx);
      drawOver(canvas, placeCentred(small, widthPx, heightPx, shiftX + 0.28 * widthPx, -0.04 * heightPx), {
        left: 0,
        top: 0,
      });
      drawOver(canvas, placeCentred(small, widthPx, heightPx, shiftX, 0.04 * heightPx), { left: 0, top: 0 });
      return canvas;
    }
    case 'reflection': {
      const small = await scaled(0.72);
      const canvas = placeCentred(small, widthPx, heightPx, shiftX, -0.16 * heightPx);
      const box = alphaBox(canvas);
      if (box) {
        const mirrored = await decodeRaster(
          sharp(cropRaster(canvas, 0, box.top, widthPx, box.height).data, {
            raw: { width: widthPx, height: box.height, channels: 4 },
          }).flip(),
        );
        drawOver(canvas, mirrored, { left: 0, top: box.top + box.height, opacity: 0.35, fadeDown: true });
      }
      return canvas;
    }
    default: {
      const unknown: never = arrangement;
      throw new Error(`unknown arrangement ${String(unknown)}`);
    }
  }
}

/** light recolours the subject: exposure, contrast, saturation, tint, and the shade of a side key light. */
function light(subject: Raster, lighting: Lighting, fromBehind: boolean, jitterBrightness: number): void {
  const brightness = lighting.brightness * jitterBrightness * (fromBehind ? 0.55 : 1);
  const saturation = lighting.saturation * (fromBehind ? 0.6 : 1);
  mapColours(subject, (x, _y, [red, green, blue]) => {
    const across = x / subject.width;
    const shadedSide = lighting.keySide > 0 ? 1 - across : lighting.keySide < 0 ? across : 0;
    const shade = 1 - lighting.keyStrength * shadedSide ** 1.5;
    const luma = 0.299 * red + 0.587 * green + 0.114 * blue;
    const out: Rgb = [red, green, blue];
    for (let channel = 0; channel < 3; channel++) {
      let value = luma + (out[channel]! - luma) * saturation;
      value = (value - 128) * lighting.contrast + 128;
      out[channel] = value * brightness * lighting.tint[channel]! * shade;
    }
    return out;
  });
}

/** rimGlow is a soft bright halo from the subject's outline, drawn behind it (back light). */
async function rimGlow(subject: Raster): Promise<Raster> {
  const glow = blankRaster(subject.width, subject.height);
  for (let at = 0; at < glow.data.length; at += 4) {
    glow.data[at] = 255;
    glow.data[at + 1] = 244;
    glow.data[at + 2] = 214;
    glow.data[at + 3] = subject.data[at + 3]!;
  }
  return blurRaster(glow, Math.max(2, subject.width / 70));
}

function backdrop(background: Background, widthPx: number, heightPx: number): Raster {
  const out = blankRaster(widthPx, heightPx);
  for (let y = 0; y < heightPx; y++) {
    const down = y / Math.max(1, heightPx - 1);
    const onGround = background.horizonAt !== null && down >= background.horizonAt;
    const colour = onGround
      ? (background.ground.map((value) => value * (0.85 + 0.15 * down)) as Rgb)
      : (background.top.map((value, channel) => value + (background.bottom[channel]! - value) * down) as Rgb);
    for (let x = 0; x < widthPx; x++) {
      const at = (y * widthPx + x) * 4;
      out.data[at] = Math.round(colour[0]);
      out.data[at + 1] = Math.round(colour[1]);
      out.data[at + 2] = Math.round(colour[2]);
      out.data[at + 3] = 255;
    }
  }
  return out;
}

/** floorShadow darkens a soft ellipse under a subject that stands within the frame. */
function floorShadow(out: Raster, box: { left: number; top: number; width: number; height: number }): void {
  const centreX = box.left + box.width / 2;
  const centreY = box.top + box.height;
  const radiusX = box.width * 0.5;
  const radiusY = Math.max(3, box.height * 0.05);
  mapColours(out, (x, y, rgb) => {
    const distance = ((x - centreX) / radiusX) ** 2 + ((y - centreY) / radiusY) ** 2;
    if (distance >= 1) return rgb;
    const darken = 1 - 0.35 * (1 - distance);
    return [rgb[0] * darken, rgb[1] * darken, rgb[2] * darken];
  });
}
