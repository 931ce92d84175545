// The album part of the OpenAPI document. document.ts calls albumOpenApi with its own helpers (so both
// parts describe errors, auth and paging alike) and spreads the result into its paths and schemas.
import { albumQueueName } from './album-jobs.js';
import {
  anchorImageBytesMax,
  directionFieldLengthMax,
  imagePromptLengthMax,
  imageSidePxMax,
  imageSidePxMin,
  shotsPerAlbumMax,
  subjectLengthMax,
} from './limits.js';
import type { OpenApiHelpers, Schema } from './openapi-helpers.js';
import { albumGenerationPaths, albumRecordPaths } from './openapi-paths.js';
import { albumRecordSchemas, albumRequestSchemas } from './openapi-schemas.js';

export type { OpenApiHelpers } from './openapi-helpers.js';

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
  return {
    paths: { ...albumRecordPaths(h), ...albumGenerationPaths(h) },
    schemas: { ...albumRecordSchemas(h), ...albumRequestSchemas(h) },
  };
}
