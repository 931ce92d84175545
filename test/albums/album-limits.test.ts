// Album limits answer 413 or 422 with a code that names the limit, and bad input is refused before any
// state changes. These need no worker; Redis is there for the generation endpoints' 202/422 checks.
import assert from 'node:assert/strict';
import {
  directionFieldLengthMax,
  imagePromptLengthMax,
  imageSidePxMax,
  shotsPerAlbumMax,
  subjectLengthMax,
} from '../../api/albums/limits.js';
import { startTestApi, useApiOnRedis } from '../api/harness.js';

describe('albums: limits and bad input', function () {
  this.timeout(60_000);
  const setup = useApiOnRedis();

  const refused = async (body: unknown, status: number, code: string) => {
    const answer = await setup.api.call('POST', '/albums', { body });
    assert.equal(answer.status, status, answer.text);
    assert.equal(answer.json.code, code, answer.text);
    return answer.json;
  };

  it('names each limit it enforces, at the limit accepted and one past it refused', async () => {
    const ok = await setup.api.call('POST', '/albums', {
      body: { subject: 's'.repeat(subjectLengthMax), template: 'PortraitSession' },
    });
    assert.equal(ok.status, 201, ok.text);
    const tooLong = await refused(
      { subject: 's'.repeat(subjectLengthMax + 1), template: 'PortraitSession' },
      422,
      'SUBJECT_TOO_LONG',
    );
    assert.deepEqual(tooLong.details, {
      limit: 'subjectLengthMax',
      max: subjectLengthMax,
      actual: subjectLengthMax + 1,
    });

    const directions = (count: number) => Array.from({ length: count }, (_, index) => ({ name: `shot ${index}` }));
    assert.equal(
      (await setup.api.call('POST', '/albums', { body: { subject: 'x', directions: directions(shotsPerAlbumMax) } }))
        .status,
      201,
    );
    await refused({ subject: 'x', directions: directions(shotsPerAlbumMax + 1) }, 422, 'TOO_MANY_SHOTS');
    await refused(
      { subject: 'x', directions: [{ name: 'n', lighting: 'l'.repeat(directionFieldLengthMax + 1) }] },
      422,
      'DIRECTION_TOO_LONG',
    );
    // Long fields that pass one by one can still make a prompt over the image services' limit.
    const long = 'w'.repeat(directionFieldLengthMax);
    await refused(
      {
        subject: 's'.repeat(subjectLengthMax),
        directions: [{ name: long, framing: long, angle: long, lighting: long, pose: long, background: long }],
      },
      422,
      'PROMPT_TOO_LONG',
    );
    assert.ok(subjectLengthMax + 6 * directionFieldLengthMax > imagePromptLengthMax);
    await refused(
      { subject: 'x', template: 'ProductShoot', width_px: imageSidePxMax + 1 },
      422,
      'IMAGE_SIZE_UNSUPPORTED',
    );
    await refused({ subject: 'x', template: 'ProductShoot', height_px: 10 }, 422, 'IMAGE_SIZE_UNSUPPORTED');
    await refused({ subject: 'x'.repeat(300 * 1024), template: 'ProductShoot' }, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('refuses albums that are not one thing or the other, and unknown or malformed fields', async () => {
    await refused(
      { subject: 'x', template: 'ProductShoot', directions: [{ name: 'a' }] },
      422,
      'TEMPLATE_OR_DIRECTIONS',
    );
    await refused({ subject: 'x' }, 422, 'TEMPLATE_OR_DIRECTIONS');
    await refused({ subject: 'x', directions: [] }, 422, 'TEMPLATE_OR_DIRECTIONS');
    await refused({ subject: '   ', template: 'ProductShoot' }, 400, 'VALIDATION_FAILED');
    await refused({ subject: 'x', template: 'Wedding' }, 400, 'VALIDATION_FAILED');
    await refused({ subject: 'x', template: 'ProductShoot', colour: 'red' }, 400, 'VALIDATION_FAILED');
    await refused({ subject: 'x', directions: [{ framing: 'close-up' }] }, 400, 'VALIDATION_FAILED');
    const list = await setup.api.call('GET', '/albums?limit=0');
    assert.equal(list.status, 400);
  });

  it('generation endpoints: 404 for an unknown album or shot, 400 for a bad index or seed, 422 before the anchor', async () => {
    const album = (
      await setup.api.call('POST', '/albums', { body: { subject: 'x', directions: [{ name: 'a' }, { name: 'b' }] } })
    ).json;
    assert.equal((await setup.api.call('POST', '/albums/alb_000000000ffffffffffffffff/anchor')).status, 404);
    assert.equal((await setup.api.call('POST', `/albums/${album.id}/shots/-1`)).status, 400);
    assert.equal((await setup.api.call('POST', `/albums/${album.id}/shots/${shotsPerAlbumMax}`)).status, 400);
    assert.equal((await setup.api.call('POST', `/albums/${album.id}/anchor`, { body: { seed: -1 } })).status, 400);
    assert.equal((await setup.api.call('POST', `/albums/${album.id}/anchor`, { body: { colour: 1 } })).status, 400);
    const early = await setup.api.call('POST', `/albums/${album.id}/shots/1`);
    assert.equal(early.status, 422);
    assert.equal(early.json.code, 'ANCHOR_REQUIRED');
    assert.equal(early.json.details.anchorState, 'none');
    const accepted = await setup.api.call('POST', `/albums/${album.id}/anchor`);
    assert.equal(accepted.status, 202);
    assert.equal(accepted.json.album.anchor.state, 'pending', 'no worker runs in this suite');
    const stillEarly = await setup.api.call('POST', `/albums/${album.id}/shots`);
    assert.equal(stillEarly.json.code, 'ANCHOR_REQUIRED');
    assert.equal(stillEarly.json.details.anchorState, 'pending');
    const image = await setup.api.call('GET', `/albums/${album.id}/images/${'0'.repeat(64)}`);
    assert.equal(image.status, 404);
  });

  it('without Redis the generation endpoints answer 503 and the rest works', async () => {
    const bare = await startTestApi();
    try {
      const album = await bare.call('POST', '/albums', { body: { subject: 'x', template: 'CharacterSheet' } });
      assert.equal(album.status, 201);
      const anchor = await bare.call('POST', `/albums/${album.json.id}/anchor`);
      assert.equal(anchor.status, 503);
      assert.equal(anchor.json.code, 'QUEUE_UNAVAILABLE');
      assert.equal((await bare.call('GET', `/albums/${album.json.id}`)).json.anchor.state, 'none', 'nothing changed');
      assert.equal((await bare.call('GET', '/events')).json.code, 'QUEUE_UNAVAILABLE');
      const templates = await bare.call('GET', '/album-templates');
      assert.deepEqual(
        templates.json.items.map((item: { name: string }) => item.name),
        ['PortraitSession', 'ProductShoot', 'CharacterSheet'],
      );
      assert.ok(templates.json.items.every((item: { directions: unknown[] }) => item.directions.length >= 6));
    } finally {
      await bare.close();
    }
  });
});
