// The album schemas of the OpenAPI document: the records (albums, anchors, shots) and the requests and
// answers around them. openapi.ts joins them in this order, which is the document's order.
import {
  imageSidePxDefault,
  imageSidePxMax,
  imageSidePxMin,
  seedMax,
  shotsPerAlbumMax,
  subjectLengthMax,
} from './limits.js';
import type { OpenApiHelpers, Schema } from './openapi-helpers.js';
import { templateNames } from './templates.js';

const nullableText = { type: ['string', 'null'] };
const nullableTime = { type: ['string', 'null'], description: 'ISO 8601 time, or null' };

/** direction is a shot direction's schema with `required` fields. */
function direction(required: string[]): Schema {
  return {
    type: 'object',
    additionalProperties: false,
    required,
    properties: {
      name: { type: 'string', minLength: 1 },
      framing: { type: 'string', description: 'extreme close-up, close-up, medium, full, wide, ...' },
      angle: {
        type: 'string',
        description: 'front, three-quarter left/right, profile left/right, back, high, low, overhead, dutch',
      },
      lighting: {
        type: 'string',
        description: 'studio, soft, high-key, low-key, rembrandt, dramatic, rim, golden hour, warm, cool, flat',
      },
      pose: { type: 'string', description: 'pose or arrangement: pair, trio, reflection, tilted, leap, ...' },
      background: {
        type: 'string',
        description: 'white, plain grey, dark, black, pastel, warm/cool/dark gradient, outdoor',
      },
    },
  };
}

/** albumRecordSchemas are the album, its anchor and shots, and what creates them. */
export function albumRecordSchemas(h: OpenApiHelpers): Record<string, Schema> {
  const { ref } = h;
  return {
    ShotDirection: direction(['name', 'framing', 'angle', 'lighting', 'pose', 'background']),
    NewShotDirection: {
      ...direction(['name']),
      description: 'fields left out take defaults (medium, front, studio, natural, plain grey)',
    },
    NewAlbum: {
      type: 'object',
      additionalProperties: false,
      required: ['subject'],
      description: 'Exactly one of `template` and `directions`.',
      properties: {
        subject: {
          type: 'string',
          minLength: 1,
          description: `what every image shows; at most ${subjectLengthMax} characters`,
        },
        name: ref('Name'),
        template: { type: 'string', enum: [...templateNames] },
        directions: { type: 'array', items: ref('NewShotDirection'), description: `at most ${shotsPerAlbumMax}` },
        width_px: {
          type: 'integer',
          description: `${imageSidePxMin}-${imageSidePxMax}, default ${imageSidePxDefault}`,
        },
        height_px: {
          type: 'integer',
          description: `${imageSidePxMin}-${imageSidePxMax}, default ${imageSidePxDefault}`,
        },
      },
    },
    AlbumAnchor: {
      type: 'object',
      additionalProperties: false,
      required: [
        'state',
        'generation',
        'seed',
        'url',
        'hash',
        'error',
        'attempts',
        'requested_at',
        'started_at',
        'completed_at',
      ],
      properties: {
        state: { type: 'string', enum: ['none', 'pending', 'generating', 'ready', 'failed'] },
        generation: { type: 'integer', description: 'counts anchor requests' },
        seed: { type: 'integer' },
        url: { ...nullableText, description: 'the AnchorURL, when ready' },
        hash: { ...nullableText, description: 'BLAKE3 of the anchor PNG' },
        error: nullableText,
        attempts: { type: 'integer' },
        requested_at: nullableTime,
        started_at: nullableTime,
        completed_at: nullableTime,
      },
    },
    Shot: {
      type: 'object',
      additionalProperties: false,
      required: [
        'index',
        'direction',
        'status',
        'variation',
        'image_url',
        'error',
        'attempts',
        'requested_at',
        'started_at',
        'completed_at',
      ],
      properties: {
        index: { type: 'integer' },
        direction: ref('ShotDirection'),
        status: { type: 'string', enum: ['pending', 'generating', 'complete', 'failed'] },
        variation: { type: 'integer' },
        image_url: nullableText,
        error: nullableText,
        attempts: { type: 'integer' },
        requested_at: nullableTime,
        started_at: nullableTime,
        completed_at: nullableTime,
      },
    },
    Album: {
      type: 'object',
      additionalProperties: false,
      required: [
        'id',
        'name',
        'subject',
        'template',
        'width_px',
        'height_px',
        'anchor',
        'shots',
        'shot_counts',
        'created_at',
        'updated_at',
      ],
      properties: {
        id: ref('Id'),
        name: nullableText,
        subject: { type: 'string' },
        template: { oneOf: [{ type: 'string', enum: [...templateNames] }, { type: 'null' }] },
        width_px: { type: 'integer' },
        height_px: { type: 'integer' },
        anchor: ref('AlbumAnchor'),
        shots: { type: 'array', items: ref('Shot') },
        shot_counts: {
          type: 'object',
          additionalProperties: false,
          required: ['pending', 'generating', 'complete', 'failed'],
          properties: {
            pending: { type: 'integer' },
            generating: { type: 'integer' },
            complete: { type: 'integer' },
            failed: { type: 'integer' },
          },
        },
        created_at: ref('Timestamp'),
        updated_at: ref('Timestamp'),
      },
    },
  };
}

/** albumRequestSchemas are the generation requests, their answers and the templates. */
export function albumRequestSchemas(h: OpenApiHelpers): Record<string, Schema> {
  const { ref } = h;
  const albumRef = { album: ref('Album'), eventsUrl: { type: 'string', description: 'the SSE stream of your events' } };
  return {
    AnchorRequest: {
      type: 'object',
      additionalProperties: false,
      properties: {
        seed: {
          type: 'integer',
          minimum: 0,
          maximum: seedMax,
          default: 0,
          description: 'another seed, another anchor',
        },
      },
    },
    ShotRequest: {
      type: 'object',
      additionalProperties: false,
      properties: {
        variation: {
          type: 'integer',
          minimum: 0,
          maximum: seedMax,
          default: 0,
          description: 'another variation, another take',
        },
      },
    },
    AnchorAccepted: {
      type: 'object',
      additionalProperties: false,
      required: ['album', 'queued', 'eventsUrl'],
      properties: {
        ...albumRef,
        queued: { type: 'boolean', description: 'false when the same request was already in flight' },
      },
    },
    ShotAccepted: {
      type: 'object',
      additionalProperties: false,
      required: ['album', 'queued', 'eventsUrl'],
      properties: {
        ...albumRef,
        queued: { type: 'boolean', description: 'false when the same request was already in flight' },
      },
    },
    ShotsAccepted: {
      type: 'object',
      additionalProperties: false,
      required: ['album', 'queuedShots', 'eventsUrl'],
      properties: {
        ...albumRef,
        queuedShots: { type: 'array', items: { type: 'integer' }, description: 'indexes of shots with a job' },
      },
    },
    ShotsDeleted: {
      type: 'object',
      additionalProperties: false,
      required: ['album', 'discarded'],
      properties: {
        album: ref('Album'),
        discarded: { type: 'integer', description: 'shots that had a result or a job' },
      },
    },
    AlbumTemplate: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'description', 'directions'],
      properties: {
        name: { type: 'string', enum: [...templateNames] },
        description: { type: 'string' },
        directions: { type: 'array', items: ref('ShotDirection') },
      },
    },
    AlbumTemplates: {
      type: 'object',
      additionalProperties: false,
      required: ['items'],
      properties: { items: { type: 'array', items: ref('AlbumTemplate') } },
    },
  };
}
