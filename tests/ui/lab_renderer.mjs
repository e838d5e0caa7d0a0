// Drives Debian's Chromium (through playwright-core, which bundles no browser) against a running
// JupyterLab and reports what the npu-jupyter renderer drew, as one JSON object on stdout.
// tests/ui/test_lab_renderer.py starts the server, writes the notebooks and asserts on the JSON;
// this script only observes, so a failed expectation shows up as a readable pytest assertion.
//
// Usage: node lab_renderer.mjs CONFIG.json
//   {base, token, chromium, artifacts, notebooks: {report, hostile, big}, clickOp}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileBrowserOpen, launchChromium } from './chromium.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const RENDER_TIMEOUT = 120_000;

const browser = await launchChromium(cfg.chromium);

const results = { pageErrors: [], dialogs: [] };

async function openNotebook(page, name) {
  const started = Date.now();
  await page.goto(`${cfg.base}/lab/tree/${encodeURIComponent(name)}?reset&token=${cfg.token}`);
  const report = page.locator('.npu-report').first();
  await report.locator('.npu-graph svg g[data-key]').first().waitFor({ timeout: RENDER_TIMEOUT });
  return { report, openMs: Date.now() - started };
}

/** What a renderer instance shows, read from the DOM. */
async function observe(report) {
  return report.evaluate(el => ({
    summary: el.querySelector('.npu-summary')?.textContent ?? null,
    title: el.querySelector('.npu-title')?.textContent ?? null,
    graphBoxes: el.querySelectorAll('.npu-graph svg g[data-key]').length,
    graphOps: el.querySelectorAll('.npu-graph svg g.npu-op').length,
    graphScopes: el.querySelectorAll('.npu-graph svg g.npu-scope').length,
    edges: el.querySelectorAll('.npu-graph svg path.npu-edge').length,
    tableRows: el.querySelectorAll('.npu-table tbody tr.npu-row').length,
    tableCount: el.querySelector('.npu-table-count')?.textContent ?? null,
    renderMs: Number(el.getAttribute('data-render-ms')),
    markupInReport: el.querySelectorAll('img, script, iframe, object, embed, a, foreignObject').length,
    tableNames: [...el.querySelectorAll('.npu-table tbody tr.npu-row td:nth-child(2)')].map(td => td.textContent),
    tableTypes: [...el.querySelectorAll('.npu-table tbody tr.npu-row td:nth-child(3)')].map(td => td.textContent),
    // Rendered column widths in px by header text, and the MIME type JupyterLab-style on the root.
    columnWidths: Object.fromEntries(
      [...el.querySelectorAll('.npu-table th')].map(th => [th.textContent.replace(/ [\u25b2\u25bc]$/, ''), th.getBoundingClientRect().width])
    ),
    tableWidth: el.querySelector('.npu-table')?.getBoundingClientRect().width ?? 0,
    mimeTypeAttr: el.closest('[data-mime-type]')?.getAttribute('data-mime-type') ?? null,
    subtitle: el.querySelector('.npu-subtitle')?.textContent ?? null,
    svgTexts: [...el.querySelectorAll('.npu-graph svg text, .npu-graph svg title')].map(t => t.textContent)
  }));
}

/**
 * The first view, before anything is clicked: the report's top scrolled to the top of the window,
 * then what is on screen -- the lead box with the host ops, the facts, the graph's fit to the cell.
 */
async function firstView(report) {
  return report.evaluate(el => {
    el.scrollIntoView({ block: 'start' });
    const view = el.querySelector('.npu-graph');
    const svg = view?.querySelector('svg');
    const hostLead = el.querySelector('.npu-lead [data-lead="host"]');
    const r = hostLead?.getBoundingClientRect();
    return {
      graphScrollWidth: view?.scrollWidth ?? null,
      graphClientWidth: view?.clientWidth ?? null,
      svgWidth: svg ? svg.getBoundingClientRect().width : null,
      svgNatural: svg ? Number(svg.getAttribute('viewBox').split(' ')[2]) : null,
      hostLead: hostLead?.textContent ?? null,
      hostLeadOnScreen: r ? r.top >= 0 && r.bottom <= window.innerHeight : null,
      transfersLead: el.querySelector('.npu-lead [data-lead="transfers"]')?.textContent ?? null,
      firstRows: [...el.querySelectorAll('.npu-table tbody tr.npu-row td:nth-child(2)')].slice(0, 3).map(td => td.textContent),
      facts: [...el.querySelectorAll('.npu-fact')].map(li => li.textContent),
      text: el.textContent
    };
  });
}

async function pwned(page) {
  return page.evaluate(() => ({
    pwned: typeof window.__pwned === 'undefined' ? null : String(window.__pwned),
    injectedImages: document.querySelectorAll('img[src="x"]').length
  }));
}

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1500 } });
  // One page per notebook: leaving a JupyterLab page can raise a "leave site?" prompt.
  let page = null;
  const freshPage = async () => {
    if (page) {
      await page.close({ runBeforeUnload: false });
    }
    page = await context.newPage();
    page.on('pageerror', err => results.pageErrors.push(String(err)));
    page.on('dialog', dialog => {
      // alert/confirm/prompt could only come from script in a report; beforeunload is Lab's own.
      if (dialog.type() !== 'beforeunload') {
        results.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
      }
      dialog.dismiss().catch(() => {});
    });
    return page;
  };

  // 1. A small plan: summary, graph, table, and selection from the table.
  {
    await freshPage();
    const { report, openMs } = await openNotebook(page, cfg.notebooks.report);
    const seen = await observe(report);
    const first = await firstView(report);
    delete first.text;
    await page.screenshot({ path: join(cfg.artifacts, 'lab_renderer_first_view.png') });
    const target = await report.evaluate((el, name) => {
      const row = [...el.querySelectorAll('.npu-table tbody tr.npu-row')].find(
        tr => tr.querySelector('td:nth-child(2)')?.textContent === name
      );
      return row ? row.getAttribute('data-op') : null;
    }, cfg.clickOp);
    const drawnBeforeClick =
      target === null ? null : (await report.locator(`g.npu-op[data-op="${target}"]`).count()) > 0;
    if (target !== null) {
      await report.locator(`.npu-table tr.npu-row[data-op="${target}"]`).click();
      await report
        .locator(`.npu-graph g.npu-op.npu-selected[data-op="${target}"]`)
        .waitFor({ timeout: 10_000 })
        .catch(() => {});
    }
    const selection = await report.evaluate(el => ({
      reports: document.querySelectorAll('.npu-report').length,
      graph: [...el.querySelectorAll('.npu-graph g.npu-op.npu-selected')].map(g => g.getAttribute('data-op')),
      table: [...el.querySelectorAll('.npu-table tr.npu-selected')].map(tr => tr.getAttribute('data-op')),
      details: el.querySelector('.npu-details')?.textContent ?? null
    }));
    await report.scrollIntoViewIfNeeded();
    await report.screenshot({ path: join(cfg.artifacts, 'lab_renderer.png') });
    await report.getByRole('button', { name: 'Precision', exact: true }).click();
    const precisionMode = await report.evaluate(el => el.classList.contains('npu-mode-precision'));
    await report.screenshot({ path: join(cfg.artifacts, 'lab_renderer_precision.png') });
    results.report = { openMs, ...seen, first, clickTarget: target, drawnBeforeClick, selection, precisionMode };
    results.report.security = await pwned(page);

    // "fit": the whole drawing inside the graph view, both directions.
    await report.locator('button.npu-tool', { hasText: 'fit' }).click();
    await page.waitForTimeout(200);
    results.report.fit = await report.evaluate(el => {
      const view = el.querySelector('.npu-graph');
      const svg = view.querySelector('svg');
      return {
        svgWidth: Number(svg.getAttribute('width')),
        svgHeight: Number(svg.getAttribute('height')),
        viewWidth: view.clientWidth,
        viewHeight: view.clientHeight,
        scrollable: view.scrollHeight > view.clientHeight + 1 || view.scrollWidth > view.clientWidth + 1
      };
    });
    await report.screenshot({ path: join(cfg.artifacts, 'lab_renderer_fit.png') });

    // Dark theme through the command palette, to check the colours read on both themes.
    try {
      await page.keyboard.press('Control+Shift+C');
      await page.keyboard.type('Use Theme: JupyterLab Dark');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.body.dataset.jpThemeLight === 'false', null, { timeout: 20_000 });
      await page.waitForTimeout(500);
      await report.screenshot({ path: join(cfg.artifacts, 'lab_renderer_dark.png') });
      results.report.darkTheme = true;
    } catch (err) {
      results.report.darkTheme = String(err);
    }
  }

  // 2. Hostile op names, types, reasons and messages: must stay text, nothing may run.
  {
    await freshPage();
    const { report } = await openNotebook(page, cfg.notebooks.hostile);
    const seen = await observe(report);
    await report.locator('.npu-table tr.npu-row').first().click();
    await report.locator('.npu-findings details').first().click().catch(() => {});
    await page.waitForTimeout(300);
    results.hostile = { ...seen, security: await pwned(page) };
  }

  // 3. A training-graph-sized report: render, expand and sort times measured in the page.
  {
    await freshPage();
    const { report, openMs } = await openNotebook(page, cfg.notebooks.big);
    const seen = await observe(report);
    const first = await firstView(report);
    delete first.text;
    const timings = await report.evaluate(el => {
      const time = action => {
        const t0 = performance.now();
        action();
        return performance.now() - t0;
      };
      const scope = el.querySelector('.npu-graph g.npu-scope');
      const before = el.querySelectorAll('.npu-graph svg g[data-key]').length;
      const expandMs = scope ? time(() => scope.dispatchEvent(new MouseEvent('click', { bubbles: true }))) : null;
      const after = el.querySelectorAll('.npu-graph svg g[data-key]').length;
      const header = [...el.querySelectorAll('.npu-table th')].find(th => th.textContent === 'op');
      const sortMs = header ? time(() => header.click()) : null;
      const filter = el.querySelector('input.npu-filter');
      const filterMs = time(() => {
        filter.value = 'conv2d';
        filter.dispatchEvent(new Event('input'));
      });
      const row = el.querySelector('.npu-table tr.npu-row');
      const revealMs = row ? time(() => row.click()) : null;
      const revealed = el.querySelectorAll('.npu-graph g.npu-op.npu-selected').length;
      return { expandMs, boxesBefore: before, boxesAfterExpand: after, sortMs, filterMs, revealMs, revealed };
    });
    await report.scrollIntoViewIfNeeded();
    await report.screenshot({ path: join(cfg.artifacts, 'lab_renderer_7k.png') });
    const { tableNames, tableTypes, svgTexts, ...rest } = seen;
    results.big = { openMs, ...rest, first, ...timings };
  }

  // 4. The view-parity payload (every field set to a marker): what the page shows of each field.
  {
    await freshPage();
    const { report } = await openNotebook(page, cfg.notebooks.parity);
    const first = await firstView(report);
    await page.screenshot({ path: join(cfg.artifacts, 'lab_renderer_run_facts.png') });
    results.parity = { text: first.text, facts: first.facts, security: await pwned(page) };
  }

  // 5. A drawing far wider than the cell: the first view must fit it, not clip its right edge.
  {
    await freshPage();
    const { report } = await openNotebook(page, cfg.notebooks.wide);
    const first = await firstView(report);
    delete first.text;
    await page.screenshot({ path: join(cfg.artifacts, 'lab_renderer_wide.png') });
    results.wide = { first };
  }

  // 6. A Keras run with --dump --profile --reference: what the first view puts in front.
  {
    await freshPage();
    const { report } = await openNotebook(page, cfg.notebooks.keras);
    await fileBrowserOpen(page);
    const seen = await report.evaluate(el => {
      el.scrollIntoView({ block: 'start' });
      const ops = [...el.querySelectorAll('.npu-graph g.npu-op')];
      const svg = el.querySelector('.npu-graph svg');
      // Frame labels against op boxes, in the SVG's own coordinates.
      const boxes = ops.map(g => g.querySelector('rect').getBBox());
      const labels = [...el.querySelectorAll('.npu-graph g.npu-cluster text')].map(t => t.getBBox());
      const meets = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
      const scroller = el.querySelector('.npu-table-scroll');
      const output = el.closest('.jp-OutputArea-output') ?? el;
      return {
        title: el.querySelector('.npu-title')?.textContent ?? null,
        // The graph view opens scrolled to the first overflow: its box is inside the view.
        overflowInView: (() => {
          const g = el.querySelector('.npu-graph g.npu-overflow');
          const view = el.querySelector('.npu-graph');
          if (!g || !view) {
            return null;
          }
          const a = g.getBoundingClientRect();
          const b = view.getBoundingClientRect();
          return a.top >= b.top && a.bottom <= b.bottom && a.left >= b.left && a.right <= b.right;
        })(),
        overflowDrawn: ops.filter(g => g.classList.contains('npu-overflow')).map(g => g.getAttribute('aria-label')),
        opLabels: ops.map(g => g.getAttribute('aria-label')),
        leads: Object.fromEntries([...el.querySelectorAll('.npu-lead [data-lead]')].map(r => [r.getAttribute('data-lead'), r.textContent])),
        driftChip: el.querySelector('.npu-summary .npu-chip-drift')?.textContent ?? null,
        headers: [...el.querySelectorAll('.npu-table th')].map(th => th.textContent),
        driftHelp: [...el.querySelectorAll('.npu-table th')].find(th => th.textContent.startsWith('drift'))?.getAttribute('title') ?? null,
        tableText: el.querySelector('.npu-table')?.textContent ?? '',
        tableScrollWidth: scroller?.scrollWidth ?? 0,
        tableClientWidth: scroller?.clientWidth ?? 0,
        reportRight: el.getBoundingClientRect().right,
        outputRight: output.getBoundingClientRect().right,
        placementReasonWidth: [...el.querySelectorAll('.npu-table th')].find(th => th.textContent === 'placement reason')?.getBoundingClientRect().width ?? 0,
        labelOverlaps: labels.filter(l => boxes.some(b => meets(l, b))).length,
        svgWidth: svg ? svg.getBoundingClientRect().width : 0,
        dumpLink: el.querySelector('[data-fact="run.dump_dir"] a')?.getAttribute('href') ?? null,
        traceLink: el.querySelector('[data-fact="run.trace_file"] a')?.getAttribute('href') ?? null
      };
    });
    await page.screenshot({ path: join(cfg.artifacts, 'lab_renderer_keras.png') });
    // "fit" keeps the labels readable: the drawing is not shrunk below half size.
    await report.locator('button.npu-tool', { hasText: 'fit' }).click();
    await page.waitForTimeout(200);
    seen.fitZoom = await report.evaluate(el => {
      const svg = el.querySelector('.npu-graph svg');
      const natural = Number(svg.getAttribute('viewBox').split(' ')[2]);
      return svg.getBoundingClientRect().width / natural;
    });
    await report.screenshot({ path: join(cfg.artifacts, 'lab_renderer_keras_fit.png') });
    // The dump folder link opens the folder in JupyterLab's file browser.
    const link = report.locator('[data-fact="run.dump_dir"] a');
    if ((await link.count()) > 0) {
      await link.click();
      await page
        .locator('.jp-DirListing-content .jp-DirListing-itemText', { hasText: 'step_0.json' })
        .first()
        .waitFor({ timeout: 15_000 })
        .catch(() => {});
      seen.afterLink = await page.evaluate(() => ({
        listing: [...document.querySelectorAll('.jp-DirListing-content .jp-DirListing-itemText')].map(t => t.textContent),
        crumbs: document.querySelector('.jp-BreadCrumbs')?.textContent ?? null
      }));
    }
    results.keras = seen;
  }

  // 7. compare() of tutorial 04's size, and 8. the sweep of tutorial 03, beside the file browser.
  for (const key of ['compare', 'sweep']) {
    await freshPage();
    const selector = key === 'compare' ? '.npu-compare' : '.npu-sweep';
    await page.goto(`${cfg.base}/lab/tree/${encodeURIComponent(cfg.notebooks[key])}?reset&token=${cfg.token}`);
    const box = page.locator(selector).first();
    await box.waitFor({ timeout: RENDER_TIMEOUT });
    const fileBrowser = await fileBrowserOpen(page);
    await page.waitForTimeout(300);
    const seen = await box.evaluate(el => {
      el.scrollIntoView({ block: 'start' });
      const output = el.closest('.jp-OutputArea-output');
      const outer = output.getBoundingClientRect();
      const table = el.querySelector('table');
      const openRows = [...el.querySelectorAll(':scope > table > tbody > tr')];
      const cells = openRows.map(tr => [...tr.children].map(td => td.textContent));
      const headers = [...table.querySelectorAll('th')];
      const notes = [...el.querySelectorAll('td[colspan]')];
      return {
        outputRight: outer.right,
        outputScrolls: output.scrollWidth > output.clientWidth + 1,
        tableRight: table.getBoundingClientRect().right,
        headerRights: headers.map(th => [th.textContent, th.getBoundingClientRect().right]),
        openRows: openRows.length,
        firstCells: cells[0] ?? [],
        cells: cells.slice(0, 30),
        nameAlign: openRows[0] ? getComputedStyle(openRows[0].children[1]).textAlign : null,
        folds: [...el.querySelectorAll('details > summary')].map(s => s.textContent),
        verdict: el.children[1]?.textContent ?? '',
        // Cells whose content runs past the cell's own right edge (into the next column).
        spills: [...el.querySelectorAll('td')]
          .filter(td => td.offsetParent !== null)
          .filter(td => [...td.querySelectorAll('*')].some(c => c.getBoundingClientRect().right > td.getBoundingClientRect().right + 1))
          .map(td => td.textContent)
          .slice(0, 5),
        // Cells shown cut with an ellipsis (content wider than the cell).
        clipped: [...el.querySelectorAll('th, td')]
          .filter(c => c.offsetParent !== null && c.scrollWidth > c.clientWidth + 1)
          .map(c => c.textContent)
          .slice(0, 5),
        height: el.getBoundingClientRect().height,
        notes: notes.map(td => ({ text: td.textContent, right: td.getBoundingClientRect().right, width: td.getBoundingClientRect().width }))
      };
    });
    seen.fileBrowser = fileBrowser;
    await page.screenshot({ path: join(cfg.artifacts, `html_${key}.png`) });
    results[key] = seen;
  }
} catch (err) {
  results.fatal = String(err && err.stack ? err.stack : err);
} finally {
  await browser.close();
}

process.stdout.write(JSON.stringify(results) + '\n');
