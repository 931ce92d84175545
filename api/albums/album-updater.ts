// AlbumUpdater is the one way album state changes, for routes and queue workers alike: read the album,
// apply a pure step (album-state.ts), write it back with compare-and-set, and retry a lost race with a short
// random pause. Backed by any DocumentStore, so it works unchanged on the replicated store, where workers on
// different nodes race on the same album.
import type { DocumentStore } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';
import { ApiError } from '../errors.js';
import type { AlbumRecord } from './album-records.js';
import { albumKeys } from './album-records.js';
import type { AlbumStep } from './album-state.js';
import { albumUpdateBackoffMsMax, albumUpdateRetriesMax } from './limits.js';

export interface AlbumRef {
  userId: string;
  albumId: string;
}

export interface AlbumUpdate<R> {
  /** album is the record after the step (unchanged when the step wrote nothing). */
  album: AlbumRecord;
  result: R;
  /** written is true when the step changed the record. */
  written: boolean;
}

export interface AlbumUpdater {
  read(ref: AlbumRef): Promise<AlbumRecord | null>;
  /** create stores a new album; its id must be fresh. */
  create(album: AlbumRecord): Promise<void>;
  /** update applies step to the current album; null when the album does not exist (deleted). */
  update<R>(ref: AlbumRef, step: (album: AlbumRecord) => AlbumStep<R>): Promise<AlbumUpdate<R> | null>;
  /** remove deletes the album; false when it did not exist. */
  remove(ref: AlbumRef): Promise<boolean>;
}

export class StoreAlbumUpdater implements AlbumUpdater {
  constructor(private readonly store: DocumentStore) {}

  async read(ref: AlbumRef): Promise<AlbumRecord | null> {
    return (await this.store.get<AlbumRecord>(albumKeys.album(ref.userId, ref.albumId)))?.value ?? null;
  }

  async create(album: AlbumRecord): Promise<void> {
    await this.store.put(albumKeys.album(album.user_id, album.id), album, { expectedVersion: 0 });
  }

  async update<R>(ref: AlbumRef, step: (album: AlbumRecord) => AlbumStep<R>): Promise<AlbumUpdate<R> | null> {
    const key = albumKeys.album(ref.userId, ref.albumId);
    for (let attempt = 0; attempt < albumUpdateRetriesMax; attempt++) {
      const current = await this.store.get<AlbumRecord>(key);
      if (!current) return null;
      const { album, result } = step(current.value);
      if (album === null) return { album: current.value, result, written: false };
      try {
        await this.store.put(key, album, { expectedVersion: current.version });
        return { album, result, written: true };
      } catch (error) {
        if (!isVersionConflict(error)) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * albumUpdateBackoffMsMax));
    }
    throw new ApiError('CONFLICT', 'the album kept changing underneath this update; retry');
  }

  async remove(ref: AlbumRef): Promise<boolean> {
    return (await this.store.delete(albumKeys.album(ref.userId, ref.albumId))).deleted;
  }
}
