// Album error codes. They answer through the API's one error handler like every ApiError; the API's code
// table (errors.ts) is closed, so AlbumError carries its own code and status on an ApiError.
import { ApiError } from '../errors.js';

export const albumErrorStatusByCode = {
  /** ANCHOR_REQUIRED: shots were asked for before the album's anchor is `ready` (the spec's ordering rule). */
  ANCHOR_REQUIRED: 422,
  SUBJECT_TOO_LONG: 422,
  DIRECTION_TOO_LONG: 422,
  PROMPT_TOO_LONG: 422,
  TOO_MANY_SHOTS: 422,
  IMAGE_SIZE_UNSUPPORTED: 422,
  /** TEMPLATE_OR_DIRECTIONS: an album names exactly one of a template or its own directions. */
  TEMPLATE_OR_DIRECTIONS: 422,
  /** IMAGE_TOO_LARGE: an image is over its byte limit (413). */
  IMAGE_TOO_LARGE: 413,
} as const;

export type AlbumErrorCode = keyof typeof albumErrorStatusByCode;

export class AlbumError extends ApiError {
  constructor(code: AlbumErrorCode, message: string, details?: unknown) {
    super('VALIDATION_FAILED', message, details);
    // ApiError's code and status are readonly for its callers; here they are set once, before anyone reads them.
    Object.assign(this, { code, status: albumErrorStatusByCode[code] });
    this.name = 'AlbumError';
  }
}
