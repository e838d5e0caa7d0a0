// Drives Debian's Chromium against a running JupyterLab and reports what the graph view's first view
// shows, as one JSON object on stdout: how large the box labels render, whether the op the lead box
// names first is on screen, how the drawing is scaled and scrolled, and what "fit" does afterwards.
// tests/ui/test_graph_first_view.py starts the server, writes the notebooks and asserts on the JSON.
//
// Usage: node graph_first_view.mjs CONFIG.json
//   {base, token, chromium, artifacts, notebooks: {name: file.ipynb, ...}}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileBrowserOpen, launchChromium } from './chromium.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const RENDER_TIMEOUT = 120_000;

const browser = await launchChromium(cfg.chromium);
const results = { pageErrors: [] };

/** The graph as a person first sees it: label sizes of the boxes on screen, the lead op, scale and scroll. */
function measure(el) {
  const view = el.querySelector('.npu-graph');
  view.scrollIntoView({ block: 'start' });
  const svg = view.querySelector('svg');
  const natural = Number(svg.getAttribute('viewBox').split(' ')[2]);
  const scale = svg.getBoundingClientRect().width / natural;
  const frame = view.getBoundingClientRect();
  const inside = r => r.top >= frame.top - 1 && r.bottom <= frame.bottom + 1 && r.left >= frame.left - 1 && r.right <= frame.right + 1;
  const meets = r => r.bottom > frame.top && r.top < frame.bottom && r.right > frame.left && r.left < frame.right;
  const onScreen = [...view.querySelectorAll('g.npu-op')].filter(g => meets(g.getBoundingClientRect()));
  const texts = cls => onScreen.map(g => g.querySelector(`text.${cls}`)).filter(Boolean);
  const heights = cls => texts(cls).map(t => t.getBoundingClientRect().height);
  const fontPx = cls => texts(cls).map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
  // The op the lead box ("what to look at first") names first.
  const leadButton = el.querySelector('.npu-lead .npu-lead-op');
  const leadOp = leadButton?.getAttribute('data-op') ?? null;
  const leadBox = leadOp === null ? null : view.querySelector(`g.npu-op[data-op="${leadOp}"]`);
  const leadRect = leadBox?.getBoundingClientRect();
  return {
    natural,
    scale,
    viewWidth: view.clientWidth,
    viewHeight: view.clientHeight,
    svgWidth: svg.getBoundingClientRect().width,
    svgHeight: svg.getBoundingClientRect().height,
    scrollWidth: view.scrollWidth,
    scrollHeight: view.scrollHeight,
    scrollLeft: view.scrollLeft,
    scrollTop: view.scrollTop,
    opsOnScreen: onScreen.length,
    labelHeights: heights('npu-label'),
    sublabelHeights: heights('npu-sublabel'),
    labelFontPx: fontPx('npu-label'),
    sublabelFontPx: fontPx('npu-sublabel'),
    note: (n => (n && !n.hidden ? n.textContent : null))(el.querySelector('.npu-graph-note')),
    leadName: leadButton?.textContent ?? null,
    leadDrawn: Boolean(leadBox),
    leadInView: leadRect ? inside(leadRect) : null,
    leadInWindow: leadRect ? leadRect.top >= 0 && leadRect.bottom <= window.innerHeight && leadRect.left >= 0 && leadRect.right <= window.innerWidth : null
  };
}

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  for (const [name, file] of Object.entries(cfg.notebooks)) {
    const page = await context.newPage();
    page.on('pageerror', err => results.pageErrors.push(`${name}: ${String(err)}`));
    page.on('dialog', dialog => dialog.dismiss().catch(() => {}));
    await page.goto(`${cfg.base}/lab/tree/${encodeURIComponent(file)}?reset&token=${cfg.token}`);
    const report = page.locator('.npu-report').first();
    await report.locator('.npu-graph svg g[data-key]').first().waitFor({ timeout: RENDER_TIMEOUT });
    const fileBrowser = await fileBrowserOpen(page);
    await page.waitForTimeout(300);
    const first = await report.evaluate(measure);
    await page.screenshot({ path: join(cfg.artifacts, `graph_first_view_${name}.png`) });
    await report.locator('button.npu-tool', { hasText: 'fit' }).click();
    await page.waitForTimeout(200);
    const fit = await report.evaluate(measure);
    results[name] = { fileBrowser, first, fit };
    await page.close({ runBeforeUnload: false });
  }
} catch (err) {
  results.fatal = String(err && err.stack ? err.stack : err);
} finally {
  await browser.close();
}

process.stdout.write(JSON.stringify(results) + '\n');
