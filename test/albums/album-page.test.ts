// The album page in a real headless Chromium: a person types the key, the page shows the anchor and then
// the shots as they complete, live over GET /events, with images fetched with the key. The key stays in
// the tab's sessionStorage: not in the URL, not in the page's HTML, not in any log line of the server. The
// screenshot is saved as svc-album-page.png in the temp directory for a person to look at.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromiumPath, launchChromium } from '../browser.js';
import type { Browser } from 'playwright-core';
import type { AlbumStack } from './helpers.js';
import { createAlbum, startAlbumStack } from './helpers.js';

interface BrowserGlobals {
  document: { querySelectorAll(selector: string): Iterable<{ complete: boolean; naturalWidth: number }> };
  sessionStorage: { getItem(key: string): string | null };
}

describe('albums: the album page in headless Chromium', function () {
  this.timeout(240_000);
  let stack: AlbumStack;
  let browser: Browser | undefined;

  before(async function () {
    if (!existsSync(chromiumPath)) this.skip();
    stack = await startAlbumStack();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('asks for the key, then shows the anchor and each shot as it completes, live', async () => {
    const { api } = stack;
    const album = await createAlbum(api, {
      subject: 'a purple robot fox mascot',
      template: 'CharacterSheet',
      name: 'Mascot sheet',
      width_px: 192,
      height_px: 192,
    });
    const page = await browser!.newPage({ viewport: { width: 1100, height: 900 } });
    const foreign: string[] = [];
    const consoleLines: string[] = [];
    page.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith(api.baseUrl) && !url.startsWith('blob:') && !url.startsWith('data:')) foreign.push(url);
    });
    page.on('console', (line) => consoleLines.push(line.text()));
    const response = await page.goto(`${api.baseUrl}/albums/${album.id}/view`);
    assert.equal(response!.status(), 200);
    assert.match(response!.headers()['content-security-policy']!, /default-src 'none'/);
    await page.locator('#key-input').waitFor();
    assert.ok(!(await page.content()).includes(api.adminKey));

    await page.locator('#key-input').fill(api.adminKey);
    await page.locator('#key-form button[type=submit]').click();
    await page.locator('#status', { hasText: 'Live' }).waitFor({ timeout: 60_000 });
    assert.ok(await page.locator('#key-form').isHidden(), 'the key form is gone once the key is taken');
    // The page says Live after its first render; waiting on the sixth card as well keeps this test from
    // depending on that order.
    await page.locator('.shot').nth(5).waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('.shot').count(), 6, 'the shots are listed, pending');
    assert.equal(await page.locator('.shot[data-status=pending]').count(), 6);

    // Generation starts after the page is open: what it shows next can only have come over the event stream.
    assert.equal((await api.call('POST', `/albums/${album.id}/anchor`)).status, 202);
    await page.locator('#anchor[data-status=ready] img').waitFor({ timeout: 60_000 });
    assert.equal((await api.call('POST', `/albums/${album.id}/shots`)).status, 202);
    await page.locator('.shot[data-status=complete] img').nth(5).waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('.shot[data-status=complete] img').count(), 6);
    // Functions, not strings: the page's CSP refuses eval. The casts stand in for DOM types this project lacks.
    await page.waitForFunction(
      () =>
        [...(globalThis as unknown as BrowserGlobals).document.querySelectorAll('img')].every(
          (img) => img.complete && img.naturalWidth === 192,
        ),
      undefined,
      { timeout: 60_000 },
    );
    // album.completed may arrive after the last shot's render: wait for it rather than read it once.
    await page.locator('#counts', { hasText: '6 complete' }).waitFor({ timeout: 60_000 });
    await page.locator('#last-event', { hasText: 'album.completed' }).waitFor({ timeout: 60_000 });

    assert.ok(!page.url().includes(api.adminKey), 'the key is not in the URL');
    assert.equal(
      await page.evaluate(() =>
        (globalThis as unknown as BrowserGlobals).sessionStorage.getItem('svc.albumView.apiKey'),
      ),
      api.adminKey,
    );
    assert.ok(!(await page.content()).includes(api.adminKey), 'the key is not in the page');
    assert.ok(!consoleLines.some((line) => line.includes(api.adminKey)));
    assert.ok(!JSON.stringify(api.logs).includes(api.adminKey), 'nor in the server log');
    assert.deepEqual(foreign, []);
    await page.screenshot({ path: path.join(os.tmpdir(), 'svc-album-page.png'), fullPage: true });

    // A refused key sends the page back to the key form and out of sessionStorage.
    await page.locator('#forget-key').click();
    await page.locator('#key-input').fill('svc_not-a-real-key');
    await page.locator('#key-form button[type=submit]').click();
    await page.locator('#status', { hasText: 'UNAUTHORIZED' }).waitFor({ timeout: 60_000 });
    assert.equal(
      await page.evaluate(() =>
        (globalThis as unknown as BrowserGlobals).sessionStorage.getItem('svc.albumView.apiKey'),
      ),
      null,
    );
  });

  it('answers 404 for a page of something that is not an album id', async () => {
    const response = await fetch(`${stack.api.baseUrl}/albums/not-an-id/view`);
    assert.equal(response.status, 404);
  });
});
