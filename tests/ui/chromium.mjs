// One place for how the browser tests start Debian's Chromium: headless, through playwright-core
// (which bundles no browser), with the flags this sandboxed, offline machine needs (no sandbox as
// root, no GPU, no background networking that would only hit the closed network).
import { chromium } from 'playwright-core';

export function launchChromium(executablePath) {
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run'
    ]
  });
}
