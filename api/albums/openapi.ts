// The album part of the OpenAPI document. document.ts calls albumOpenApi with its own helpers (so both
// parts describe errors, auth and paging alike) and spreads the result into its paths and schemas.
import { albumQueueName } from './album-jobs.js';
import {
  anchorImageBytesMax,
  directionFieldLengthMax,
  imagePromptLengthMax,
  imageSidePxDefault,
  imageSidePxMax,
  imageSidePxMin,
  seedMax,
  shotsPerAlbumMax,
  subjectLengthMax,
} from './limits.js';
import { templateNames } from './templates.js';

type Schema = Record<string, unknown>;

export interface OpenApiHelpers {
  ref: (name: string) => Schema;
  json: (schema: Schema) => Schema;
  errorResponse: (description: string) => Schema;
  authenticated: (operation: Schema) => Schema;
  publicOperation: (operation: Schema) => Schema;
  idParam: Schema;
  pageParams: Schema[];
  page: (item: string) => Schema;
}

export const albumTag = {
  name: 'albums',
  description: `Albums: one subject, one anchor image, N directed shots of that same subject.

**Order.** Create an album (a template or your own directions), \`POST /albums/{id}/anchor\`, wait for
\`anchor.completed\`, then \`POST /albums/{id}/shots\`. Shots before the anchor is \`ready\` answer 422
\`ANCHOR_REQUIRED\`. Generation runs as queue jobs (queue \`${albumQueueName}\`); the requests answer 202.

**Anchor states.** \`none\` → \`pending\` (queued) → \`generating\` → \`ready\` | \`failed\`; a retryable failure goes
back to \`pending\` until the attempts run out. Asking for an anchor again starts a new generation from any
state, except that repeating the request in flight (same \`seed\`) changes nothing. **A new anchor resets every
shot** to \`pending\` without an image, and jobs of the old anchor do nothing: shots always show the current anchor.

**Shot status.** \`pending\` → \`generating\` → \`complete\` | \`failed\` (with \`error\`); a retryable failure goes back
to \`pending\`. One failed shot does not stop the others. \`POST /albums/{id}/shots\` queues every shot that is not
complete (failed ones again); \`POST /albums/{id}/shots/{index}\` regenerates one (another \`variation\` gives
another take); \`DELETE /albums/{id}/shots\` returns every shot to \`pending\` without an image.

**Events** arrive on the caller's channel \`user:<userId>\` through \`GET /events\` (SSE, ids, \`Last-Event-ID\`):
\`anchor.started\`, \`anchor.retrying\`, \`anchor.completed\` {anchorUrl}, \`anchor.failed\` {error}, \`shot.started\`,
\`shot.retrying\`, \`shot.completed\` {imageUrl}, \`shot.failed\` {error}, and \`album.completed\` {complete, failed} when
no shot is pending or generating any more. Every event's data has \`albumId\` and \`at\`.

**Images** are PNGs of the album's size at \`/albums/{id}/images/{hash}\` (the key is needed; \`hash\` is the BLAKE3 of
the bytes). \`anchor.url\` is the AnchorURL.

**Limits** (422 unless said): subject ${subjectLengthMax} characters (\`SUBJECT_TOO_LONG\`), ${shotsPerAlbumMax} shots
(\`TOO_MANY_SHOTS\`), ${directionFieldLengthMax} characters per direction field (\`DIRECTION_TOO_LONG\`), a composed
prompt of ${imagePromptLengthMax} characters (\`PROMPT_TOO_LONG\`), image sides ${imageSidePxMin}-${imageSidePxMax} px
(\`IMAGE_SIZE_UNSUPPORTED\`), anchor image ${anchorImageBytesMax} bytes (a larger one fails with
\`IMAGE_TOO_LARGE\`).`,
};

export function albumOpenApi(h: OpenApiHelpers): { paths: Record<string, Schema>; schemas: Record<string, Schema> } {
  const { ref, json, errorResponse, authenticated } = h;
  const indexParam = {
    name: 'index',
    in: 'path',
    required: true,
    schema: { type: 'integer', minimum: 0, maximum: shotsPerAlbumMax - 1 },
  };
  const nullableText = { type: ['string', 'null'] };
  const nullableTime = { type: ['string', 'null'], description: 'ISO 8601 time, or null' };
  const noAlbum = errorResponse('NOT_FOUND: no such album for this key');
  const queueDown = errorResponse('QUEUE_UNAVAILABLE: no Redis, or it failed; repeating the request is safe');

  const paths: Record<string, Schema> = {
    '/album-templates': {
      get: authenticated({
        operationId: 'listAlbumTemplates',
        tags: ['albums'],
        summary: 'The built-in shot templates',
        responses: { 200: { description: 'templates', content: json(ref('AlbumTemplates')) } },
      }),
    },
    '/albums': {
      get: authenticated({
        operationId: 'listAlbums',
        tags: ['albums'],
        summary: "List the key's user's albums, oldest first",
        parameters: h.pageParams,
        responses: { 200: { description: 'albums', content: json(h.page('Album')) } },
      }),
      post: authenticated({
        operationId: 'createAlbum',
        tags: ['albums'],
        summary: 'Create an album from a template or your own directions',
        requestBody: { required: true, content: json(ref('NewAlbum')) },
        responses: {
          201: { description: 'created; every shot is pending and the anchor is none', content: json(ref('Album')) },
          422: errorResponse(
            'SUBJECT_TOO_LONG, TOO_MANY_SHOTS, DIRECTION_TOO_LONG, PROMPT_TOO_LONG, ' +
              'IMAGE_SIZE_UNSUPPORTED or TEMPLATE_OR_DIRECTIONS',
          ),
        },
      }),
    },
    '/albums/{id}': {
      get: authenticated({
        operationId: 'getAlbum',
        tags: ['albums'],
        summary: 'Get an album',
        parameters: [h.idParam],
        responses: { 200: { description: 'the album', content: json(ref('Album')) }, 404: noAlbum },
      }),
      delete: authenticated({
        operationId: 'deleteAlbum',
        tags: ['albums'],
        summary: 'Delete an album (its queued jobs then do nothing)',
        parameters: [h.idParam],
        responses: { 204: { description: 'deleted' }, 404: noAlbum },
      }),
    },
    '/albums/{id}/anchor': {
      post: authenticated({
        operationId: 'generateAnchor',
        tags: ['albums'],
        summary: 'Start generating the anchor from the subject',
        description: 'Starts a new anchor generation (and resets every shot) unless the same request is in flight.',
        parameters: [h.idParam],
        requestBody: { required: false, content: json(ref('AnchorRequest')) },
        responses: {
          202: { description: 'accepted', content: json(ref('AnchorAccepted')) },
          404: noAlbum,
          503: queueDown,
        },
      }),
    },
    '/albums/{id}/shots': {
      post: authenticated({
        operationId: 'generateShots',
        tags: ['albums'],
        summary: 'Start generating every shot that is not complete',
        parameters: [h.idParam],
        responses: {
          202: { description: 'accepted', content: json(ref('ShotsAccepted')) },
          404: noAlbum,
          422: errorResponse('ANCHOR_REQUIRED: the anchor is not ready'),
          503: queueDown,
        },
      }),
      delete: authenticated({
        operationId: 'deleteShots',
        tags: ['albums'],
        summary: "Discard every shot's image and result",
        parameters: [h.idParam],
        responses: {
          200: { description: 'every shot is pending again', content: json(ref('ShotsDeleted')) },
          404: noAlbum,
        },
      }),
    },
    '/albums/{id}/shots/{index}': {
      post: authenticated({
        operationId: 'generateShot',
        tags: ['albums'],
        summary: 'Generate (or regenerate) one shot',
        parameters: [h.idParam, indexParam],
        requestBody: { required: false, content: json(ref('ShotRequest')) },
        responses: {
          202: { description: 'accepted', content: json(ref('ShotAccepted')) },
          404: errorResponse('NOT_FOUND: no such album, or no shot at this index'),
          422: errorResponse('ANCHOR_REQUIRED: the anchor is not ready'),
          503: queueDown,
        },
      }),
    },
    '/albums/{id}/images/{hash}': {
      get: authenticated({
        operationId: 'getAlbumImage',
        tags: ['albums'],
        summary: "One of the album's images (anchor or shot), as PNG",
        parameters: [
          h.idParam,
          { name: 'hash', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } },
        ],
        responses: {
          200: { description: 'the image', content: { 'image/png': { schema: { type: 'string', format: 'binary' } } } },
          404: errorResponse('NOT_FOUND: the album does not show this image'),
        },
      }),
    },
    '/albums/{id}/view': {
      get: h.publicOperation({
        operationId: 'viewAlbumPage',
        tags: ['albums'],
        summary: 'A web page that shows the album live',
        description:
          'The page holds no album data: it asks for the API key, keeps it in the tab (sessionStorage) and ' +
          'sends it in X-API-Key; it follows GET /events to show shots as they complete.',
        parameters: [h.idParam],
        responses: { 200: { description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } } },
      }),
    },
    '/events': {
      get: authenticated({
        operationId: 'streamUserEvents',
        tags: ['albums'],
        summary: "Server-Sent Events of the caller's channel user:<userId>",
        description:
          "Album events of the key's user, from any node. Without Last-Event-ID the stream starts now; " +
          'with one it resumes just after it (`0`: from the oldest event kept). Quiet periods carry `: keep-alive` comments.',
        parameters: [
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', maxLength: 64 } },
        ],
        responses: {
          200: { description: 'the event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          503: errorResponse('QUEUE_UNAVAILABLE'),
        },
      }),
    },
  };

  const direction = (required: string[]): Schema => ({
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
  });
  const albumRef = { album: ref('Album'), eventsUrl: { type: 'string', description: 'the SSE stream of your events' } };

  const schemas: Record<string, Schema> = {
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
  return { paths, schemas };
}
