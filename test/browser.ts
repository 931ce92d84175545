// Headless Chromium for the page tests (the album page, /cluster, /docs, the trace viewer): Debian's chromium,
// which CI installs, launched the same way by every test that drives a page.
import { chromium, type Browser } from 'playwright-core';

export const chromiumPath = '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
