// The OpenAI-compatible adapter against a local stand-in service: what it sends (key, model, size, prompt,
// the anchor as the edit's image), how it reads failures (retryable or not), and a whole album made through
// it by the worker. The stand-in is test/albums/image-service-stand-in.ts, not a real service.
import assert from 'node:assert/strict';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { OpenAiImageGenerator } from '../../api/images/openai-generator.js';
import { ImageGenerationError } from '../../api/images/image-generator.js';
import { imageGeneratorFromEnv } from '../../api/images/generator-config.js';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { templates } from '../../api/albums/templates.js';
import type { AlbumStack, EventFollower, Json } from './helpers.js';
import { createAlbum, decodePng, fetchImage, followEvents, startAlbumStack, waitForEvent } from './helpers.js';
import type { ImageServiceStandIn } from './image-service-stand-in.js';
import { startImageServiceStandIn } from './image-service-stand-in.js';

const serviceKey = 'sk-stand-in-secret-0123456789';
const direction = templates.PortraitSession.directions[1]!;

describe('albums: the OpenAI-compatible adapter, against a local stand-in service', function () {
  this.timeout(60_000);
  let service: ImageServiceStandIn;
  let generator: OpenAiImageGenerator;

  before(async () => {
    service = await startImageServiceStandIn(serviceKey);
    generator = new OpenAiImageGenerator({ baseUrl: `${service.baseUrl}/`, apiKey: serviceKey, model: 'gpt-image-1', timeoutMs: 2000 });
  });
  after(async () => {
    await service?.close();
  });
  beforeEach(() => {
    service.requests.length = 0;
    service.failures.length = 0;
    service.stallMs = 0;
    service.sizeOverride = null;
  });

  it('asks for the anchor by prompt and for a shot by editing the anchor it sends', async () => {
    const anchorPng = await generator.generateAnchor({ subject: 'a red fox in a scarf', seed: 0, widthPx: 96, heightPx: 64 });
    assert.deepEqual([decodePng(anchorPng).width, decodePng(anchorPng).height], [96, 64]);
    const [generation] = service.requests;
    assert.equal(generation!.path, '/v1/images/generations');
    assert.equal(generation!.authorization, `Bearer ${serviceKey}`);
    assert.equal(generation!.fields.model, 'gpt-image-1');
    assert.equal(generation!.fields.size, '96x64');
    assert.equal(generation!.fields.response_format, 'b64_json');
    assert.match(String(generation!.fields.prompt), /^a red fox in a scarf\n/);

    const shot = await generator.generateShot({ anchorPng, subject: 'a red fox in a scarf', direction, variation: 2, widthPx: 96, heightPx: 64 });
    assert.deepEqual([decodePng(shot).width, decodePng(shot).height], [96, 64]);
    const edit = service.requests[1]!;
    assert.equal(edit.path, '/v1/images/edits');
    assert.ok(edit.image!.equals(anchorPng), 'the edit carries the anchor itself');
    for (const text of [direction.framing, direction.angle, direction.lighting, direction.pose, direction.background, 'Take 3']) {
      assert.ok(String(edit.fields.prompt).includes(text), `prompt mentions ${text}`);
    }
    assert.equal(edit.fields.size, '96x64');
  });

  it('resizes an answer of another size to the asked size', async () => {
    service.sizeOverride = { width: 50, height: 50 };
    const png = await generator.generateAnchor({ subject: 'x', seed: 0, widthPx: 80, heightPx: 40 });
    assert.deepEqual([decodePng(png).width, decodePng(png).height], [80, 40]);
  });

  it('calls 429, 5xx and timeouts retryable, other refusals final, and never repeats the key', async () => {
    const outcome = async (prepare: () => void, theGenerator = generator) => {
      prepare();
      try {
        await theGenerator.generateAnchor({ subject: 'x', seed: 0, widthPx: 64, heightPx: 64 });
      } catch (error) {
        assert.ok(error instanceof ImageGenerationError);
        assert.ok(!error.message.includes(serviceKey));
        return { retryable: error.retryable, code: error.code, message: error.message };
      }
      throw new Error('expected a failure');
    };
    assert.deepEqual(await outcome(() => service.failures.push({ status: 500, message: 'boom' })),
      { retryable: true, code: 'SERVICE_UNAVAILABLE', message: 'the image service answered 500: boom' });
    assert.equal((await outcome(() => service.failures.push({ status: 429, message: 'slow down' }))).retryable, true);
    assert.deepEqual(await outcome(() => service.failures.push({ status: 400, message: 'prompt refused by the safety system' })),
      { retryable: false, code: 'SERVICE_REFUSED', message: 'the image service answered 400: prompt refused by the safety system' });
    const wrongKey = new OpenAiImageGenerator({ baseUrl: service.baseUrl, apiKey: 'sk-wrong', model: 'm', timeoutMs: 2000 });
    assert.equal((await outcome(() => undefined, wrongKey)).code, 'SERVICE_REFUSED');
    const slow = new OpenAiImageGenerator({ baseUrl: service.baseUrl, apiKey: serviceKey, model: 'm', timeoutMs: 150 });
    const timedOut = await outcome(() => { service.stallMs = 1000; }, slow);
    assert.deepEqual([timedOut.retryable, timedOut.message], [true, 'the image service did not answer within 150 ms']);
    const nobody = new OpenAiImageGenerator({ baseUrl: 'http://127.0.0.1:1', apiKey: serviceKey, model: 'm' });
    assert.equal((await outcome(() => undefined, nobody)).retryable, true);
  });

  it('is chosen by configuration', () => {
    assert.ok(imageGeneratorFromEnv({}) instanceof ProceduralImageGenerator);
    const chosen = imageGeneratorFromEnv({ SVC_IMAGE_GENERATOR: 'openai', SVC_IMAGE_API_URL: service.baseUrl, SVC_IMAGE_API_KEY: serviceKey });
    assert.ok(chosen instanceof OpenAiImageGenerator);
    assert.throws(() => imageGeneratorFromEnv({ SVC_IMAGE_GENERATOR: 'openai' }), /needs SVC_IMAGE_API_URL/);
    assert.throws(() => imageGeneratorFromEnv({ SVC_IMAGE_GENERATOR: 'dalle' }), /builtin or openai/);
  });

  describe('a whole album through the worker', () => {
    let stack: AlbumStack;
    let follower: EventFollower;

    before(async () => {
      stack = await startAlbumStack({ inner: generator });
      follower = await followEvents(stack.api);
    });
    after(async () => {
      follower?.close();
      await stack?.close();
    });

    it('makes the anchor, then every shot from the anchor fetched at run time; a refused shot fails alone', async () => {
      const { api } = stack;
      const album = await createAlbum(api, { subject: 'a copper kettle', template: 'ProductShoot' });
      await api.call('POST', `/albums/${album.id}/anchor`);
      await waitForEvent(follower, album.id, 'anchor.completed');
      const anchored = (await api.call('GET', `/albums/${album.id}`)).json;
      const anchorBytes = await fetchImage(api, anchored.anchor.url);

      service.requests.length = 0;
      service.failures.push({ status: 400, message: 'this one is refused' });
      await api.call('POST', `/albums/${album.id}/shots`);
      await waitForEvent(follower, album.id, 'album.completed');
      const done: Json = (await api.call('GET', `/albums/${album.id}`)).json;
      assert.deepEqual(done.shot_counts, { pending: 0, generating: 0, complete: 5, failed: 1 });
      const failed = done.shots.find((shot: Json) => shot.status === 'failed');
      assert.equal(failed.error, 'SERVICE_REFUSED: the image service answered 400: this one is refused');
      assert.equal(service.requests.length, 6);
      for (const request of service.requests) {
        assert.equal(request.path, '/v1/images/edits');
        assert.equal(bytesToHex(blake3(request.image!)), anchored.anchor.hash, 'each shot was sent the stored anchor');
        assert.ok(request.image!.equals(anchorBytes));
      }
      for (const shot of done.shots.filter((item: Json) => item.status === 'complete')) {
        const png = decodePng(await fetchImage(api, shot.image_url));
        assert.deepEqual([png.width, png.height], [160, 128]);
      }
      const eventText = JSON.stringify(follower.events) + JSON.stringify(done);
      assert.ok(!eventText.includes(serviceKey), 'the service key appears in no event or album');
    });
  });
});
