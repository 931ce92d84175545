// Helpers for the album tests: a fresh album record, an SSE follower that collects events while a test runs, a PNG decoder
// independent of the generator's library (pngjs), and generators that fail on purpose.
import { PNG } from 'pngjs';
import type { ImageGenerator, AnchorRequest, ShotRequest } from '../../api/images/image-generator.js';
import { ImageGenerationError } from '../../api/images/image-generator.js';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { startAlbumWorker } from '../../api/albums/album-worker.js';
import type { AlbumWorker } from '../../api/albums/album-worker.js';
import type { AlbumRecord } from '../../api/albums/album-records.js';
import { newAlbumRecord as apiNewAlbumRecord } from '../../api/albums/new-album.js';
import { startTestApi, startTestRedis, waitFor } from '../api/harness.js';
import type { TestApi, TestRedis } from '../api/harness.js';

/** albumFixtureTime stamps every fixture album; tests use it as their steps' clock too. */
export const albumFixtureTime = '2026-01-01T00:00:00.000Z';
/** albumFixtureUserId owns every fixture album. */
export const albumFixtureUserId = 'usr_000000000aaaaaaaaaaaaaaaa';

/** newAlbumRecord is a stored album as POST /albums leaves it (the API's own newAlbumRecord): anchor none, shotCount pending shots. */
export function newAlbumRecord(shotCount = 3, fields: Partial<Pick<AlbumRecord, 'id' | 'subject'>> = {}): AlbumRecord {
  const directions = Array.from({ length: shotCount }, (_, index) => ({
    name: `s${index}`,
    framing: 'medium',
    angle: 'front',
    lighting: 'studio',
    pose: 'natural',
    background: 'white',
  }));
  return apiNewAlbumRecord(
    fields.id ?? 'alb_000000000aaaaaaaaaaaaaaaa',
    albumFixtureUserId,
    { name: null, subject: fields.subject ?? 'a fox', template: null, directions, widthPx: 64, heightPx: 64 },
    albumFixtureTime,
  );
}

export interface SseEvent {
  id: string;
  event: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
}

export interface EventFollower {
  events: SseEvent[];
  comments: string[];
  status: number;
  close(): void;
}

/** followEvents opens GET /events and collects its events until close (bounded by timeoutMs). */
export async function followEvents(
  api: TestApi,
  options: { key?: string; lastEventId?: string } = {},
  timeoutMs = 60_000,
): Promise<EventFollower> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const headers: Record<string, string> = { 'x-api-key': options.key ?? api.adminKey, accept: 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(`${api.baseUrl}/events`, { headers, signal: controller.signal });
  const follower: EventFollower = {
    events: [],
    comments: [],
    status: response.status,
    close() {
      clearTimeout(timer);
      controller.abort();
    },
  };
  if (response.status !== 200 || !response.body) {
    follower.close();
    return follower;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let opened: () => void;
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  void (async () => {
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const lines = buffer.slice(0, cut).split('\n').filter(Boolean);
          buffer = buffer.slice(cut + 2);
          if (lines.every((line) => line.startsWith(':'))) {
            follower.comments.push(...lines);
            opened!();
            continue;
          }
          const field = (name: string) =>
            lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2) ?? '';
          follower.events.push({ id: field('id'), event: field('event'), data: JSON.parse(field('data')) });
        }
      }
    } catch {
      // aborted
    }
  })();
  // The stream's first comment comes once its starting point is fixed: events after it are not missed.
  await open;
  return follower;
}

export function decodePng(bytes: Buffer): PNG {
  return PNG.sync.read(bytes);
}

/** FailingGenerator wraps a generator and fails the shots whose direction name it is told, as it is told. */
export class FailingGenerator implements ImageGenerator {
  readonly name = 'failing';
  readonly failShots = new Map<string, { retryable: boolean; times: number }>();
  shotCalls = 0;
  anchorCalls = 0;
  /** gate, while set, holds every shot until it resolves. */
  gate: Promise<void> | null = null;

  constructor(private readonly inner: ImageGenerator) {}

  async generateAnchor(request: AnchorRequest): Promise<Buffer> {
    this.anchorCalls++;
    return this.inner.generateAnchor(request);
  }

  async generateShot(request: ShotRequest): Promise<Buffer> {
    this.shotCalls++;
    await this.gate;
    const failure = this.failShots.get(request.direction.name);
    if (failure && failure.times > 0) {
      failure.times--;
      throw new ImageGenerationError(`injected failure for ${request.direction.name}`, failure.retryable, 'INJECTED');
    }
    return this.inner.generateShot(request);
  }
}

export interface AlbumStack {
  redis: TestRedis;
  api: TestApi;
  generator: FailingGenerator;
  worker: AlbumWorker;
  close(): Promise<void>;
}

/** startAlbumStack starts real Redis, the API over the in-memory store, and an album worker on both. */
export async function startAlbumStack(
  options: { backoffMs?: number; concurrency?: number; inner?: ImageGenerator } = {},
): Promise<AlbumStack> {
  const redis = await startTestRedis();
  const api = await startTestApi({ redisUrl: redis.url, config: { sseKeepAliveMs: 200 } });
  const generator = new FailingGenerator(options.inner ?? new ProceduralImageGenerator());
  const worker = await startAlbumWorker({
    redisUrl: redis.url,
    store: api.store,
    generator,
    backoffMs: options.backoffMs ?? 40,
    concurrency: options.concurrency ?? 4,
  });
  return {
    redis,
    api,
    generator,
    worker,
    async close() {
      await worker.close();
      await api.close();
      await redis.stop();
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** createAlbum posts an album and returns its JSON (asserting 201). */
export async function createAlbum(api: TestApi, body: Record<string, unknown>, key?: string): Promise<Json> {
  const created = await api.call('POST', '/albums', { body: { width_px: 160, height_px: 128, ...body }, key });
  if (created.status !== 201) throw new Error(`create album: ${created.status} ${created.text}`);
  return created.json;
}

/** eventsOf returns the events that name albumId. */
export function eventsOf(follower: EventFollower, albumId: string): SseEvent[] {
  return follower.events.filter((event) => event.data?.albumId === albumId);
}

/** waitForEvent waits until an event of albumId matches (bounded), and returns it. */
export async function waitForEvent(
  follower: EventFollower,
  albumId: string,
  name: string,
  holds: (event: SseEvent) => boolean = () => true,
  timeoutMs = 30_000,
): Promise<SseEvent> {
  const found = await waitFor(
    async () => eventsOf(follower, albumId).find((event) => event.event === name && holds(event)),
    (event) => event !== undefined,
    timeoutMs,
  );
  return found!;
}

/** fetchImage gets an album image with the key and returns its bytes (asserting 200 and image/png). */
export async function fetchImage(api: TestApi, url: string, key?: string): Promise<Buffer> {
  const response = await fetch(api.baseUrl + url, { headers: { 'x-api-key': key ?? api.adminKey } });
  if (response.status !== 200) throw new Error(`image ${url}: ${response.status} ${await response.text()}`);
  if (response.headers.get('content-type') !== 'image/png')
    throw new Error(`image ${url}: ${response.headers.get('content-type')}`);
  return Buffer.from(await response.arrayBuffer());
}
