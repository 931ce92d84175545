// Helpers for albums on a three-node cluster, all through the SDK: a user of its own per case (so its channel
// holds only that case's events), a follower of `user:<userId>` over GET /events on a chosen node, image
// bytes by getAlbumImage, decoded with pngjs (not the library that drew them), and the album queue's counts.
import assert from 'node:assert/strict';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { PNG } from 'pngjs';
import type { Album, ChannelEvent, SvcClient } from '../../sdk/src/index.js';
// The SDK's index does not re-export the album types yet; they are in its generated types.
import { SvcApiError } from '../../sdk/src/index.js';
import { albumQueueName } from '../../api/albums/album-jobs.js';
import { waitFor } from '../node/harness.js';
import type { ApiCluster } from '../cluster-api/api-cluster.js';

/** EVENT_WAIT_MS bounds waiting for one album event (a whole album, or a kill's recovery, comes within it). */
export const EVENT_WAIT_MS = 45_000;

export interface AlbumEventData {
  albumId: string;
  index?: number;
  imageUrl?: string;
  anchorUrl?: string;
  attempt?: number;
  complete?: number;
  failed?: number;
}

export type AlbumEvent = ChannelEvent & { data: AlbumEventData };

/** UserEvents follows one user's channel from the oldest kept event, on one node, until close(). */
export class UserEvents {
  readonly events: AlbumEvent[] = [];
  private readonly controller = new AbortController();
  private readonly done: Promise<void>;
  reconnects = 0;
  error: unknown = null;

  constructor(client: SvcClient) {
    this.done = (async () => {
      try {
        const stream = client.userEvents({
          lastEventId: '0',
          signal: this.controller.signal,
          onReconnect: () => {
            this.reconnects++;
          },
        });
        for await (const event of stream) this.events.push(event as AlbumEvent);
      } catch (error) {
        if (!this.controller.signal.aborted) this.error = error;
      }
    })();
  }

  of(albumId: string): AlbumEvent[] {
    return this.events.filter((event) => event.data?.albumId === albumId);
  }

  count(albumId: string, name: string): number {
    return this.of(albumId).filter((event) => event.event === name).length;
  }

  /** waitFor waits (bounded) until an event of albumId named name satisfies holds, and returns it. */
  async waitFor(
    albumId: string,
    name: string,
    holds: (event: AlbumEvent) => boolean = () => true,
    timeoutMs = EVENT_WAIT_MS,
  ): Promise<AlbumEvent> {
    let found: AlbumEvent | undefined;
    await waitFor(
      () => {
        if (this.error) throw this.error;
        found = this.of(albumId).find((event) => event.event === name && holds(event));
        return found !== undefined;
      },
      `${name} for album ${albumId}`,
      timeoutMs,
    );
    return found!;
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}

/** newUser makes a developer user and key on one node; its clients on every node. */
export async function newUser(cluster: ApiCluster, on: string, name: string): Promise<{ userId: string; key: string }> {
  const admin = cluster.client(on);
  const user = await admin.createUser({ body: { name } });
  const issued = await admin.createKey({ body: { name: `${name}-key`, role: 'developer', user_id: user.id } });
  return { userId: user.id, key: issued.key };
}

/** streamIdBefore compares Redis stream ids (<ms>-<seq>) numerically. */
export function streamIdBefore(a: string, b: string): boolean {
  const [aMs, aSeq] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bMs, bSeq] = b.split('-').map(BigInt) as [bigint, bigint];
  return aMs < bMs || (aMs === bMs && aSeq < bSeq);
}

/** imageBytes fetches an album image through the SDK (GET /albums/{id}/images/{hash}). */
export async function imageBytes(client: SvcClient, albumId: string, url: string): Promise<Buffer> {
  const hash = url.split('/').at(-1)!;
  const body = (await client.getAlbumImage({ path: { id: albumId, hash } })) as unknown;
  assert.ok(body instanceof Blob, `the image of ${url} came back as ${typeof body}`);
  return Buffer.from(await body.arrayBuffer());
}

/** checkPng decodes bytes as PNG (pngjs) and checks the size, and that url names their BLAKE3. */
export function checkPng(bytes: Buffer, url: string, widthPx: number, heightPx: number): void {
  const png = PNG.sync.read(bytes);
  assert.deepEqual([png.width, png.height], [widthPx, heightPx], `${url}: decoded size`);
  assert.equal(url.split('/').at(-1), bytesToHex(blake3(bytes)), `${url} names the BLAKE3 of its bytes`);
}

/** readAlbum reads an album, waiting out 503 STORE_UNAVAILABLE while the cluster elects a leader. */
export async function readAlbum(client: SvcClient, albumId: string): Promise<Album> {
  let album: Album | undefined;
  await waitFor(
    async () => {
      try {
        album = await client.getAlbum({ path: { id: albumId } });
        return true;
      } catch (error) {
        if (error instanceof SvcApiError && error.status === 503) return false;
        throw error;
      }
    },
    `album ${albumId} to be readable`,
    EVENT_WAIT_MS,
  );
  return album!;
}

/** albumJobCounts counts the album queue's jobs by state, from the shared Redis. */
export async function albumJobCounts(redisUrl: string): Promise<Record<string, number>> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(albumQueueName, { connection });
  try {
    return await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized', 'completed', 'failed');
  } finally {
    await queue.close();
    connection.disconnect();
  }
}
