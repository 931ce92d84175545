// GET /docs in a real headless Chromium: the page renders the operations from /openapi.json using only
// assets served by this process (any request to another origin fails the test). Playwright gives the browser
// a fresh temporary profile; the page is saved as svc-api-docs.png in the temp directory for a person to see.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromiumPath, launchChromium } from '../browser.js';
import type { Browser } from 'playwright-core';
import { startTestApi } from './harness.js';
import type { TestApi } from './harness.js';

describe('api: /docs in headless Chromium', function () {
  this.timeout(60_000);
  let api: TestApi;
  let browser: Browser | undefined;

  before(async function () {
    // Chromium is a Debian package (chromium) that .ci/run does not install yet; see api/README.md.
    if (!existsSync(chromiumPath)) this.skip();
    api = await startTestApi();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  it('renders every tag and the key operations, loading nothing from other origins', async () => {
    const page = await browser!.newPage();
    const foreign: string[] = [];
    const failed: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(api.baseUrl) && !request.url().startsWith('data:')) foreign.push(request.url());
    });
    page.on('requestfailed', (request) => failed.push(request.url()));
    await page.goto(`${api.baseUrl}/docs`);
    await page.locator('.opblock-summary-path').first().waitFor({ timeout: 30_000 });
    const operations = await page.locator('.opblock-summary').allInnerTexts();
    const joined = operations.join('\n');
    for (const path of ['/projects', '/work/stats', '/credentials', '/keys/{id}/rotate', '/health']) {
      assert.ok(joined.includes(path), `${path} rendered`);
    }
    assert.match(await page.locator('.info').innerText(), /IP_NOT_ALLOWED/);
    assert.deepEqual(foreign, []);
    assert.deepEqual(failed, []);
    await page.screenshot({ path: path.join(os.tmpdir(), 'svc-api-docs.png') });
  });
});
