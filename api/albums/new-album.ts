// checkNewAlbum turns a validated POST /albums body into album fields, enforcing the album limits with
// their own codes (422), which the OpenAPI schema leaves to this check so a client learns which limit.
import { ApiError } from '../errors.js';
import { AlbumError } from './album-errors.js';
import {
  directionFieldLengthMax,
  imagePromptLengthMax,
  imageSidePxDefault,
  imageSidePxMax,
  imageSidePxMin,
  seedMax,
  shotsPerAlbumMax,
  subjectLengthMax,
} from './limits.js';
import type { ShotDirection, TemplateName } from './templates.js';
import type { AlbumRecord } from './album-records.js';
import { directionDefaults, templates } from './templates.js';
import { shotPrompt } from '../images/image-generator.js';

export interface NewAlbumBody {
  subject: string;
  name?: string;
  template?: TemplateName;
  directions?: Array<{
    name: string;
    framing?: string;
    angle?: string;
    lighting?: string;
    pose?: string;
    background?: string;
  }>;
  width_px?: number;
  height_px?: number;
}

export interface NewAlbumFields {
  subject: string;
  name: string | null;
  template: TemplateName | null;
  directions: ShotDirection[];
  widthPx: number;
  heightPx: number;
}

const directionFields = ['name', 'framing', 'angle', 'lighting', 'pose', 'background'] as const;

export function checkNewAlbum(body: NewAlbumBody): NewAlbumFields {
  const subject = body.subject.trim();
  if (subject.length === 0) {
    throw new ApiError('VALIDATION_FAILED', 'the subject must not be blank', [
      { path: '/body/subject', message: 'blank' },
    ]);
  }
  if (subject.length > subjectLengthMax) {
    throw new AlbumError(
      'SUBJECT_TOO_LONG',
      `the subject has ${subject.length} characters; at most ${subjectLengthMax}`,
      { limit: 'subjectLengthMax', max: subjectLengthMax, actual: subject.length },
    );
  }
  if ((body.template === undefined) === (body.directions === undefined)) {
    throw new AlbumError(
      'TEMPLATE_OR_DIRECTIONS',
      'name either a template or your own directions, not both or neither',
    );
  }
  const given = body.directions ?? [];
  if (given.length > shotsPerAlbumMax) {
    throw new AlbumError(
      'TOO_MANY_SHOTS',
      `${given.length} directions; an album has at most ${shotsPerAlbumMax} shots`,
      { limit: 'shotsPerAlbumMax', max: shotsPerAlbumMax, actual: given.length },
    );
  }
  if (body.directions !== undefined && given.length === 0) {
    throw new AlbumError('TEMPLATE_OR_DIRECTIONS', 'directions must hold at least one shot');
  }
  const directions: ShotDirection[] =
    body.template !== undefined
      ? templates[body.template].directions.map((direction) => ({ ...direction }))
      : given.map((direction) => ({
          name: direction.name,
          framing: direction.framing ?? directionDefaults.framing,
          angle: direction.angle ?? directionDefaults.angle,
          lighting: direction.lighting ?? directionDefaults.lighting,
          pose: direction.pose ?? directionDefaults.pose,
          background: direction.background ?? directionDefaults.background,
        }));
  directions.forEach((direction, index) => {
    for (const field of directionFields) {
      if (direction[field]!.length > directionFieldLengthMax) {
        throw new AlbumError(
          'DIRECTION_TOO_LONG',
          `directions[${index}].${field} is over ${directionFieldLengthMax} characters`,
          { limit: 'directionFieldLengthMax', max: directionFieldLengthMax, actual: direction[field]!.length },
        );
      }
    }
    const prompt = shotPrompt(subject, direction, seedMax);
    if (prompt.length > imagePromptLengthMax) {
      throw new AlbumError(
        'PROMPT_TOO_LONG',
        `the prompt of shot ${index} would have ${prompt.length} characters; at most ${imagePromptLengthMax}`,
        { limit: 'imagePromptLengthMax', max: imagePromptLengthMax, actual: prompt.length },
      );
    }
  });
  const widthPx = body.width_px ?? imageSidePxDefault;
  const heightPx = body.height_px ?? imageSidePxDefault;
  for (const side of [widthPx, heightPx]) {
    if (!Number.isInteger(side) || side < imageSidePxMin || side > imageSidePxMax) {
      throw new AlbumError(
        'IMAGE_SIZE_UNSUPPORTED',
        `image sides are whole numbers from ${imageSidePxMin} to ${imageSidePxMax} pixels`,
        { min: imageSidePxMin, max: imageSidePxMax, width_px: widthPx, height_px: heightPx },
      );
    }
  }
  return { subject, name: body.name ?? null, template: body.template ?? null, directions, widthPx, heightPx };
}

/** newAlbumRecord is a new album's record: its anchor not asked for yet and every shot pending. */
export function newAlbumRecord(id: string, userId: string, fields: NewAlbumFields, now: string): AlbumRecord {
  return {
    id,
    user_id: userId,
    name: fields.name,
    subject: fields.subject,
    template: fields.template,
    width_px: fields.widthPx,
    height_px: fields.heightPx,
    anchor: {
      state: 'none',
      generation: 0,
      seed: 0,
      url: null,
      hash: null,
      error: null,
      attempts: 0,
      requested_at: null,
      started_at: null,
      completed_at: null,
    },
    shots: fields.directions.map((direction, index) => ({
      index,
      direction,
      status: 'pending',
      variation: 0,
      request: 0,
      queued: false,
      image_url: null,
      image_hash: null,
      error: null,
      attempts: 0,
      requested_at: null,
      started_at: null,
      completed_at: null,
    })),
    created_at: now,
    updated_at: now,
  };
}
