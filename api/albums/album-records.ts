// The album record kept in the DocumentStore, its key, and the JSON view the API answers with.
// One album is one document (`albums/<userId>/<albumId>`): anchor and shots change together under one
// compare-and-set, so "the last shot finished" is decided exactly once, by the write that made it so.
import type { ShotDirection, TemplateName } from './templates.js';

export const albumKeys = {
  /** userAlbums is the prefix of one user's albums; listing it pages that user's albums oldest first. */
  userAlbums: (userId: string) => `albums/${userId}/`,
  album: (userId: string, albumId: string) => `albums/${userId}/${albumId}`,
} as const;

/**
 * AnchorState: `none` (never requested) → `pending` (queued) → `generating` (a worker has it) → `ready` or
 * `failed`; a retryable failure goes `generating` → `pending` until the attempts run out. A new request from
 * any state starts a new generation (see album-state.ts).
 */
export type AnchorState = 'none' | 'pending' | 'generating' | 'ready' | 'failed';
export type ShotStatus = 'pending' | 'generating' | 'complete' | 'failed';

export interface AnchorRecord {
  [key: string]: string | number | null;
  state: AnchorState;
  /** generation counts anchor requests; jobs carry it, and a job of an older generation does nothing. */
  generation: number;
  seed: number;
  /** url is the AnchorURL: the authenticated path of the anchor image, set when `ready`. */
  url: string | null;
  hash: string | null;
  error: string | null;
  attempts: number;
  requested_at: string | null;
  started_at: string | null;
  completed_at: string | null;
}

export interface ShotRecord {
  [key: string]: string | number | boolean | null | ShotDirection;
  index: number;
  direction: ShotDirection;
  status: ShotStatus;
  variation: number;
  /** request counts generation requests of this shot; it names the job, and an older job does nothing. */
  request: number;
  /** queued is true from a request until its job completes or fails for good. */
  queued: boolean;
  image_url: string | null;
  image_hash: string | null;
  error: string | null;
  attempts: number;
  requested_at: string | null;
  started_at: string | null;
  completed_at: string | null;
}

export interface AlbumRecord {
  [key: string]: string | number | null | AnchorRecord | ShotRecord[];
  id: string;
  user_id: string;
  name: string | null;
  subject: string;
  template: TemplateName | null;
  width_px: number;
  height_px: number;
  anchor: AnchorRecord;
  shots: ShotRecord[];
  created_at: string;
  updated_at: string;
}

/** imagePath is the authenticated URL of one of an album's images (the anchor's is its AnchorURL). */
export function imagePath(albumId: string, hash: string): string {
  return `/albums/${albumId}/images/${hash}`;
}

const imagePathPattern = /^\/albums\/([a-z]{3}_[0-9a-z]{9}[0-9a-f]{16})\/images\/([0-9a-f]{64})$/;

/** parseImagePath reads an album id and a blob hash out of an image path, or null when it is not one. */
export function parseImagePath(url: string): { albumId: string; hash: string } | null {
  const match = imagePathPattern.exec(url);
  return match ? { albumId: match[1]!, hash: match[2]! } : null;
}

export interface ShotCounts {
  [key: string]: number;
  pending: number;
  generating: number;
  complete: number;
  failed: number;
}

export function shotCounts(album: AlbumRecord): ShotCounts {
  const counts: ShotCounts = { pending: 0, generating: 0, complete: 0, failed: 0 };
  for (const shot of album.shots) counts[shot.status]++;
  return counts;
}

/** albumView is the API's JSON for an album: the record without job bookkeeping, plus shot counts. */
export function albumView(album: AlbumRecord) {
  return {
    id: album.id,
    name: album.name,
    subject: album.subject,
    template: album.template,
    width_px: album.width_px,
    height_px: album.height_px,
    anchor: { ...album.anchor },
    shots: album.shots.map((shot) => ({
      index: shot.index,
      direction: shot.direction,
      status: shot.status,
      variation: shot.variation,
      image_url: shot.image_url,
      error: shot.error,
      attempts: shot.attempts,
      requested_at: shot.requested_at,
      started_at: shot.started_at,
      completed_at: shot.completed_at,
    })),
    shot_counts: shotCounts(album),
    created_at: album.created_at,
    updated_at: album.updated_at,
  };
}

export type AlbumView = ReturnType<typeof albumView>;
