// A STAND-IN for an OpenAI-compatible image service, for tests only: POST /v1/images/generations (JSON) and
// POST /v1/images/edits (multipart with the reference image), answering {data: [{b64_json}]} with PNGs made
// by sharp. An edit tints the reference image it was sent, so a shot visibly comes from its anchor. It
// records every request and can be told to fail, stall or answer another size.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export interface StandInRequest {
  path: string;
  authorization: string | undefined;
  fields: Record<string, string>;
  /** image is the uploaded reference image of an edit. */
  image: Buffer | null;
}

export interface ImageServiceStandIn {
  baseUrl: string;
  requests: StandInRequest[];
  /** failures are answered, in order of the requests' arrival, instead of images: {status, message}. */
  failures: Array<{ status: number; message: string }>;
  /** stallMs delays every answer (to test timeouts). */
  stallMs: number;
  /** sizeOverride answers images of this size whatever was asked. */
  sizeOverride: { width: number; height: number } | null;
  close(): Promise<void>;
}

const colourOf = (text: string) => {
  const bytes = createHash('sha256').update(text).digest();
  return { r: bytes[0]!, g: bytes[1]!, b: bytes[2]! };
};

export async function startImageServiceStandIn(apiKey: string): Promise<ImageServiceStandIn> {
  const standIn: ImageServiceStandIn = {
    baseUrl: '', requests: [], failures: [], stallMs: 0, sizeOverride: null, close: async () => undefined,
  };

  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const path = req.url ?? '';
        const fields: Record<string, string> = {};
        let image: Buffer | null = null;
        if (path === '/v1/images/generations') {
          Object.assign(fields, JSON.parse(body.toString('utf8')) as Record<string, string>);
        } else if (path === '/v1/images/edits') {
          const form = await new Response(body, { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
          for (const [name, value] of form.entries()) {
            if (typeof value === 'string') fields[name] = value;
            else image = Buffer.from(await value.arrayBuffer());
          }
        } else {
          answer(res, 404, { error: { message: 'no such endpoint' } });
          return;
        }
        standIn.requests.push({ path, authorization: req.headers.authorization, fields, image });
        // A failure belongs to the request that arrives next: a stalled request (whose client gave up
        // long ago) must not take one queued for a later test when its stall ends.
        const authorized = req.headers.authorization === `Bearer ${apiKey}`;
        const failure = authorized ? standIn.failures.shift() : undefined;
        if (standIn.stallMs > 0) await new Promise((resolve) => setTimeout(resolve, standIn.stallMs));
        if (!authorized) {
          answer(res, 401, { error: { message: 'Incorrect API key provided' } });
          return;
        }
        if (failure) {
          answer(res, failure.status, { error: { message: failure.message } });
          return;
        }
        const [width, height] = standIn.sizeOverride ? [standIn.sizeOverride.width, standIn.sizeOverride.height]
          : String(fields.size).split('x').map(Number) as [number, number];
        const png = image
          ? await sharp(image).resize(width, height, { fit: 'fill' }).tint(colourOf(String(fields.prompt))).png().toBuffer()
          : await sharp({ create: { width, height, channels: 3, background: colourOf(String(fields.prompt)) } }).png().toBuffer();
        answer(res, 200, { created: 1, data: [{ b64_json: png.toString('base64') }] });
      })().catch((error: unknown) => answer(res, 500, { error: { message: String(error) } }));
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => { server.once('listening', resolve); server.once('error', reject); });
  standIn.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  standIn.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return standIn;
}
