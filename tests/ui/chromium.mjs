// One place for how the browser tests start Debian's Chromium (and open Lab's file browser): headless, through playwright-core
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

/** Open JupyterLab's file browser in the left sidebar (as a user has it); return its width in px. */
export async function fileBrowserOpen(page) {
  const width = () => page.evaluate(() => document.querySelector('#filebrowser')?.getBoundingClientRect().width ?? 0);
  if ((await width()) < 50) {
    await page.locator('.jp-SideBar.jp-mod-left [data-id="filebrowser"]').first().click().catch(() => {});
    await page.waitForTimeout(500);
  }
  return width();
}
