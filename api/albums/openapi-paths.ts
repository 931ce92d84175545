// The album paths of the OpenAPI document: the records (albums, templates) and their generation (anchor,
// shots, images, events). openapi.ts joins them in this order, which is the document's order.
import { shotsPerAlbumMax } from './limits.js';
import type { OpenApiHelpers, Schema } from './openapi-helpers.js';

/** albumErrors are the answers every album path shares. */
function albumErrors(h: OpenApiHelpers): { noAlbum: Schema; queueDown: Schema } {
  return {
    noAlbum: h.errorResponse('NOT_FOUND: no such album for this key'),
    queueDown: h.errorResponse('QUEUE_UNAVAILABLE: no Redis, or it failed; repeating the request is safe'),
  };
}

/** albumRecordPaths are the album records' paths: templates, the list, one album. */
export function albumRecordPaths(h: OpenApiHelpers): Record<string, Schema> {
  const { ref, json, errorResponse, authenticated } = h;
  const { noAlbum } = albumErrors(h);
  return {
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
  };
}

/** albumGenerationPaths are the paths that generate and serve an album's images, and its events. */
export function albumGenerationPaths(h: OpenApiHelpers): Record<string, Schema> {
  const { ref, json, errorResponse, authenticated } = h;
  const { noAlbum, queueDown } = albumErrors(h);
  const indexParam = {
    name: 'index',
    in: 'path',
    required: true,
    schema: { type: 'integer', minimum: 0, maximum: shotsPerAlbumMax - 1 },
  };
  return {
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
}
