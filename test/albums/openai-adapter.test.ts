// The OpenAI-compatible adapter against local stand-ins of two real services (test/albums/image-service-stand-in.ts,
// not real services): OpenAI's Images API with gpt-image-1, and LocalAI with Stable Diffusion. What it sends
// (only each service's documented parameters and sizes, the anchor as the edit's image), that the stand-ins refuse
// what the real services refuse, how it reads failures (retryable or not), and a whole album made through it.
import assert from 'node:assert/strict';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { OpenAiImageGenerator } from '../../api/images/openai-generator.js';
import { ImageGenerationError } from '../../api/images/image-generator.js';
import { imageGeneratorFromEnv } from '../../api/images/generator-config.js';
import { closestGptImageSize, closestLocalAiSize } from '../../api/images/image-service-contracts.js';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { templates } from '../../api/albums/templates.js';
import type { AlbumStack, EventFollower, Json } from './helpers.js';
import { createAlbum, decodePng, fetchImage, followEvents, startAlbumStack, waitForEvent } from './helpers.js';
import type { ImageServiceStandIn } from './image-service-stand-in.js';
import { startImageServiceStandIn } from './image-service-stand-in.js';

const serviceKey = 'sk-stand-in-secret-0123456789';
const direction = templates.PortraitSession.directions[1]!;

/** post sends a raw request to a stand-in, as another client would. */
async function post(
  service: ImageServiceStandIn,
  path: string,
  body: Record<string, unknown> | FormData,
): Promise<{ status: number; json: Json }> {
  const response = await fetch(service.baseUrl + path, {
    method: 'POST',
    headers:
      body instanceof FormData
        ? { authorization: `Bearer ${serviceKey}` }
        : { authorization: `Bearer ${serviceKey}`, 'content-type': 'application/json' },
    body: body instanceof FormData ? body : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

describe('albums: image service sizes', () => {
  it("asks gpt-image-1 for the documented size closest to the album's aspect ratio", () => {
    const cases: Array<[number, number, string]> = [
      [160, 128, '1536x1024'],
      [128, 160, '1024x1536'],
      [512, 512, '1024x1024'],
      [100, 110, '1024x1024'],
      [1536, 64, '1536x1024'],
      [64, 1536, '1024x1536'],
      [96, 64, '1536x1024'],
    ];
    for (const [width, height, size] of cases)
      assert.equal(closestGptImageSize(width, height).text, size, `${width}x${height}`);
  });

  it("asks LocalAI for the album's aspect at Stable Diffusion's scale, sides multiples of 64", () => {
    const cases: Array<[number, number, string]> = [
      [160, 128, '640x512'],
      [512, 512, '512x512'],
      [96, 64, '768x512'],
      [64, 1536, '64x1024'],
      [1536, 1536, '512x512'],
      [128, 160, '512x640'],
    ];
    for (const [width, height, size] of cases) {
      const asked = closestLocalAiSize(width, height);
      assert.equal(asked.text, size, `${width}x${height}`);
      assert.ok(asked.widthPx % 8 === 0 && asked.heightPx % 8 === 0);
    }
  });
});

describe("albums: the adapter with gpt-image-1, against a stand-in of OpenAI's Images API", function () {
  this.timeout(60_000);
  let service: ImageServiceStandIn;
  let generator: OpenAiImageGenerator;

  before(async () => {
    service = await startImageServiceStandIn(serviceKey, { service: 'openai' });
    generator = new OpenAiImageGenerator({
      baseUrl: `${service.baseUrl}/`,
      apiKey: serviceKey,
      model: 'gpt-image-1',
      timeoutMs: 5000,
    });
  });
  after(async () => {
    await service?.close();
  });
  beforeEach(() => {
    service.requests.length = 0;
    service.refusals.length = 0;
    service.failures.length = 0;
    service.stallMs = 0;
    service.sizeOverride = null;
  });

  it('asks for the anchor by prompt and for a shot by editing the anchor it sends, with documented parameters only', async () => {
    const anchorPng = await generator.generateAnchor({
      subject: 'a red fox in a scarf',
      seed: 0,
      widthPx: 96,
      heightPx: 64,
    });
    assert.deepEqual([decodePng(anchorPng).width, decodePng(anchorPng).height], [96, 64]);
    assert.deepEqual(service.refusals, []);
    const [generation] = service.requests;
    assert.equal(generation!.path, '/v1/images/generations');
    assert.equal(generation!.authorization, `Bearer ${serviceKey}`);
    assert.deepEqual(Object.keys(generation!.fields).sort(), [
      'background',
      'model',
      'n',
      'output_format',
      'prompt',
      'quality',
      'size',
    ]);
    assert.equal(generation!.fields.model, 'gpt-image-1');
    assert.equal(generation!.fields.size, '1536x1024', 'the supported size closest to 96x64');
    assert.equal(generation!.fields.output_format, 'png');
    assert.equal(generation!.fields.background, 'opaque');
    assert.equal(generation!.fields.quality, 'auto');
    assert.equal(generation!.fields.n, 1);
    assert.match(String(generation!.fields.prompt), /^a red fox in a scarf\n/);

    const shot = await generator.generateShot({
      anchorPng,
      subject: 'a red fox in a scarf',
      direction,
      variation: 2,
      widthPx: 96,
      heightPx: 64,
    });
    assert.deepEqual([decodePng(shot).width, decodePng(shot).height], [96, 64]);
    const edit = service.requests[1]!;
    assert.equal(edit.path, '/v1/images/edits');
    assert.ok(edit.image!.equals(anchorPng), 'the edit carries the anchor itself');
    for (const text of [
      direction.framing,
      direction.angle,
      direction.lighting,
      direction.pose,
      direction.background,
      'Take 3',
    ]) {
      assert.ok(String(edit.fields.prompt).includes(text), `prompt mentions ${text}`);
    }
    assert.equal(edit.fields.size, '1536x1024');
    assert.ok(!('response_format' in edit.fields));
  });

  it('the stand-in refuses what gpt-image-1 refuses, with the real error shape', async () => {
    const base = { model: 'gpt-image-1', prompt: 'a fox' };
    const refusedGenerations: Array<[Record<string, unknown>, string, string]> = [
      // What this adapter used to send (issue 13): response_format and the album's own size.
      [{ ...base, size: '96x64', response_format: 'b64_json' }, 'response_format', 'unknown_parameter'],
      [{ ...base, response_format: 'url' }, 'response_format', 'unknown_parameter'],
      [{ ...base, size: '512x512' }, 'size', 'invalid_value'],
      [{ ...base, size: '1792x1024' }, 'size', 'invalid_value'],
      [{ ...base, quality: 'hd' }, 'quality', 'invalid_value'],
      [{ ...base, background: 'green' }, 'background', 'invalid_value'],
      [{ ...base, output_format: 'gif' }, 'output_format', 'invalid_value'],
      [{ ...base, output_compression: 50 }, 'output_compression', 'invalid_value'],
      [{ ...base, n: 11 }, 'n', 'integer_above_max_value'],
      [{ ...base, n: '1' }, 'n', 'invalid_type'],
      [{ ...base, steps: 30 }, 'steps', 'unknown_parameter'],
      [{ model: 'gpt-image-1' }, 'prompt', 'missing_required_parameter'],
    ];
    for (const [body, param, code] of refusedGenerations) {
      const result = await post(service, '/v1/images/generations', body);
      assert.equal(result.status, 400, JSON.stringify(body));
      assert.deepEqual(
        Object.keys(result.json.error).sort(),
        ['code', 'message', 'param', 'type'],
        JSON.stringify(body),
      );
      assert.deepEqual(
        [result.json.error.type, result.json.error.param, result.json.error.code],
        ['invalid_request_error', param, code],
        JSON.stringify(body),
      );
    }
    const sizeRefusal = await post(service, '/v1/images/generations', { ...base, size: '512x512' });
    assert.equal(
      sizeRefusal.json.error.message,
      "Invalid value: '512x512'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.",
    );
    for (const size of ['1024x1024', '1536x1024', '1024x1536', 'auto']) {
      const accepted = await post(service, '/v1/images/generations', {
        ...base,
        size,
        quality: 'low',
        output_format: 'png',
      });
      assert.equal(accepted.status, 200, size);
      assert.equal(typeof accepted.json.data[0].b64_json, 'string', 'base64 without being asked');
      assert.ok(!('url' in accepted.json.data[0]));
    }

    const anchorPng = await new ProceduralImageGenerator().generateAnchor({
      subject: 'a fox',
      seed: 0,
      widthPx: 64,
      heightPx: 64,
    });
    const editForm = (fields: Record<string, string>, withImage = true) => {
      const form = new FormData();
      if (withImage) form.append('image', new Blob([anchorPng], { type: 'image/png' }), 'anchor.png');
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      return form;
    };
    const refusedEdits: Array<[FormData, string, string]> = [
      [editForm({ ...base, size: '96x64' } as Record<string, string>), 'size', 'invalid_value'],
      [
        editForm({ ...base, response_format: 'b64_json' } as Record<string, string>),
        'response_format',
        'unknown_parameter',
      ],
      [editForm(base as Record<string, string>, false), 'image', 'missing_required_parameter'],
    ];
    for (const [form, param, code] of refusedEdits) {
      const result = await post(service, '/v1/images/edits', form);
      assert.equal(result.status, 400, param);
      assert.deepEqual([result.json.error.param, result.json.error.code], [param, code]);
    }
    assert.equal(
      (
        await post(
          service,
          '/v1/images/edits',
          editForm({ ...base, size: '1024x1024', n: '1' } as Record<string, string>),
        )
      ).status,
      200,
    );
  });

  it('resizes an answer of another size to the asked size', async () => {
    service.sizeOverride = { width: 50, height: 50 };
    const png = await generator.generateAnchor({ subject: 'x', seed: 0, widthPx: 80, heightPx: 40 });
    assert.deepEqual([decodePng(png).width, decodePng(png).height], [80, 40]);
  });

  it('is not configured with a model of another contract', () => {
    assert.throws(
      () => new OpenAiImageGenerator({ baseUrl: service.baseUrl, apiKey: serviceKey, model: 'dall-e-3' }),
      /GPT image models/,
    );
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
    assert.deepEqual(await outcome(() => service.failures.push({ status: 500, message: 'boom' })), {
      retryable: true,
      code: 'SERVICE_UNAVAILABLE',
      message: 'the image service answered 500: boom',
    });
    assert.equal((await outcome(() => service.failures.push({ status: 429, message: 'slow down' }))).retryable, true);
    assert.deepEqual(
      await outcome(() => service.failures.push({ status: 400, message: 'prompt refused by the safety system' })),
      {
        retryable: false,
        code: 'SERVICE_REFUSED',
        message: 'the image service answered 400: prompt refused by the safety system',
      },
    );
    const wrongKey = new OpenAiImageGenerator({
      baseUrl: service.baseUrl,
      apiKey: 'sk-wrong',
      model: 'gpt-image-1',
      timeoutMs: 2000,
    });
    assert.equal((await outcome(() => undefined, wrongKey)).code, 'SERVICE_REFUSED');
    const slow = new OpenAiImageGenerator({
      baseUrl: service.baseUrl,
      apiKey: serviceKey,
      model: 'gpt-image-1',
      timeoutMs: 150,
    });
    const timedOut = await outcome(() => {
      service.stallMs = 1000;
    }, slow);
    assert.deepEqual([timedOut.retryable, timedOut.message], [true, 'the image service did not answer within 150 ms']);
    const nobody = new OpenAiImageGenerator({
      baseUrl: 'http://127.0.0.1:1',
      apiKey: serviceKey,
      model: 'gpt-image-1',
    });
    assert.equal((await outcome(() => undefined, nobody)).retryable, true);
  });

  it('is chosen by configuration', () => {
    assert.ok(imageGeneratorFromEnv({}) instanceof ProceduralImageGenerator);
    const chosen = imageGeneratorFromEnv({
      SVC_IMAGE_GENERATOR: 'openai',
      SVC_IMAGE_API_URL: service.baseUrl,
      SVC_IMAGE_API_KEY: serviceKey,
    });
    assert.ok(chosen instanceof OpenAiImageGenerator);
    assert.throws(() => imageGeneratorFromEnv({ SVC_IMAGE_GENERATOR: 'openai' }), /needs SVC_IMAGE_API_URL/);
    assert.throws(
      () => imageGeneratorFromEnv({ SVC_IMAGE_GENERATOR: 'dalle' }),
      /SVC_IMAGE_GENERATOR .*one of builtin, openai/,
    );
    const env = { SVC_IMAGE_GENERATOR: 'openai', SVC_IMAGE_API_URL: service.baseUrl, SVC_IMAGE_API_KEY: serviceKey };
    assert.equal(imageGeneratorFromEnv({ ...env, SVC_IMAGE_SERVICE: 'localai' }).name, 'localai');
    assert.throws(() => imageGeneratorFromEnv({ ...env, SVC_IMAGE_SERVICE: 'midjourney' }), /openai, localai/);
    assert.throws(() => imageGeneratorFromEnv({ ...env, SVC_IMAGE_MODEL: 'dall-e-2' }), /GPT image models/);
    assert.throws(() => imageGeneratorFromEnv({ ...env, SVC_IMAGE_QUALITY: 'hd' }), /quality/);
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

describe('albums: the adapter with LocalAI (Stable Diffusion), against a stand-in of LocalAI', function () {
  this.timeout(60_000);
  let service: ImageServiceStandIn;
  let generator: OpenAiImageGenerator;

  before(async () => {
    service = await startImageServiceStandIn(serviceKey, { service: 'localai' });
    generator = new OpenAiImageGenerator({
      baseUrl: service.baseUrl,
      apiKey: serviceKey,
      service: 'localai',
      model: 'sd-1.5',
      editModel: 'sd-img2img',
      timeoutMs: 5000,
    });
  });
  after(async () => {
    await service?.close();
  });

  it('asks for base64 at a size Stable Diffusion takes, and sends the anchor as the image-to-image file', async () => {
    const subject = 'a mug | with text';
    const anchorPng = await generator.generateAnchor({ subject, seed: 0, widthPx: 96, heightPx: 64 });
    assert.deepEqual([decodePng(anchorPng).width, decodePng(anchorPng).height], [96, 64]);
    const shot = await generator.generateShot({
      anchorPng,
      subject,
      direction,
      variation: 0,
      widthPx: 96,
      heightPx: 64,
    });
    assert.deepEqual([decodePng(shot).width, decodePng(shot).height], [96, 64]);
    assert.deepEqual(service.refusals, []);
    const [generation, edit] = service.requests;
    for (const request of [generation!, edit!]) {
      assert.equal(request.path, '/v1/images/generations');
      assert.equal(request.fields.response_format, 'b64_json');
      assert.equal(request.fields.size, '768x512');
      assert.ok(!String(request.fields.prompt).includes('|'), 'a | would start the negative prompt');
    }
    assert.equal(generation!.fields.model, 'sd-1.5');
    assert.equal(generation!.fields.file, undefined);
    assert.equal(edit!.fields.model, 'sd-img2img');
    assert.ok(edit!.image!.equals(anchorPng), 'the shot is drawn from the anchor');
  });

  it('the stand-in refuses what LocalAI refuses, with its error shape, and answers a URL unless asked for base64', async () => {
    for (const size of ['100x100', 'axb', '512x512x2']) {
      const result = await post(service, '/v1/images/generations', {
        prompt: 'a fox',
        size,
        response_format: 'b64_json',
      });
      assert.equal(result.status, 500, size);
      assert.deepEqual(Object.keys(result.json.error).sort(), ['code', 'message', 'type']);
      assert.equal(result.json.error.code, 500);
    }
    const badFile = await post(service, '/v1/images/generations', {
      prompt: 'a fox',
      size: '512x512',
      file: 'not base64!',
    });
    assert.equal(badFile.status, 500);
    const url = await post(service, '/v1/images/generations', { prompt: 'a fox', size: '512x512', unknown_field: 1 });
    assert.equal(url.status, 200, 'unknown fields are ignored');
    assert.equal(typeof url.json.data[0].url, 'string');
    assert.equal((await post(service, '/v1/images/edits', { prompt: 'a fox' })).status, 404);
  });
});
