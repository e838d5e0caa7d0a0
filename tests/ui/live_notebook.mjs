// Drives Debian's Chromium (through playwright-core) through a notebook the way a new user would:
// open it in JupyterLab, Run → Run All Cells on a live kernel, then use the panel. Reports what the
// page showed as one JSON object on stdout; tests/ui/test_live_notebook.py writes the notebook,
// starts the server and asserts on the JSON (this script only observes and clicks).
//
// Usage: node live_notebook.mjs CONFIG.json
//   {base, token, chromium, artifacts, notebook, cells: {error, panel, graph, train, explain, probe},
//    newPrecision}
// `cells` are indices of code cells (0-based, among all cells of the notebook).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium } from './chromium.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const RUN_TIMEOUT = 150_000;

const browser = await launchChromium(cfg.chromium);

const results = { pageErrors: [], consoleErrors: [], dialogs: [], timings: {} };
const started = Date.now();
const mark = name => {
  results.timings[name] = Date.now() - started;
};

/** The notebook's cells (all kinds), in order. */
const CELLS = '.jp-NotebookPanel .jp-Notebook .jp-Cell';
const cellAt = (page, index) => page.locator(CELLS).nth(index);

/** Every code cell has an execution count and the kernel is idle: the run is over. */
async function waitForRunDone(page, timeout) {
  await page.waitForFunction(
    () => {
      const indicator = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
      if (!indicator || indicator.getAttribute('data-status') !== 'idle') {
        return false;
      }
      const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')];
      return prompts.length > 0 && prompts.every(p => /\[\d+\]/.test(p.textContent));
    },
    null,
    { timeout, polling: 500 }
  );
}

/** What one cell's output area holds: output kinds, MIME types, text, widget and report parts. */
async function outputsOf(cell) {
  return cell.evaluate(el => {
    const outputs = [...el.querySelectorAll('.jp-OutputArea-output')];
    const text = outputs.map(o => o.innerText).join('\n');
    const report = el.querySelector('.npu-report');
    return {
      prompt: el.querySelector('.jp-InputArea-prompt')?.textContent ?? null,
      count: outputs.length,
      // JupyterLab marks the rendered widget (the output node itself, or its child) with its MIME type.
      mimeTypes: outputs.map(
        o => o.getAttribute('data-mime-type') ?? o.querySelector('[data-mime-type]')?.getAttribute('data-mime-type') ?? null
      ),
      text,
      stderr: [...el.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')].map(
        o => o.innerText
      ),
      // ipywidgets: live views have these classes; a saved-state/disconnected view shows text instead.
      widgetViews: el.querySelectorAll('.jupyter-widgets').length,
      tabTitles: [...el.querySelectorAll('.lm-TabBar-tab .lm-TabBar-tabLabel')].map(t => t.textContent),
      selects: el.querySelectorAll('.widget-dropdown select').length,
      reports: el.querySelectorAll('.npu-report').length,
      // The labextension's renderer widget (the HTML fallback also has .npu-report, not this class).
      reportOutputs: outputs.filter(
        o => o.classList.contains('npu-report-widget') || o.querySelector('.npu-report-widget') !== null
      ).length,
      graphSvgs: el.querySelectorAll('.npu-report-widget .npu-graph svg').length,
      reportTitles: [...el.querySelectorAll('.npu-report .npu-title')].map(t => t.textContent),
      summary: report?.querySelector('.npu-summary')?.textContent ?? null,
      title: report?.querySelector('.npu-title')?.textContent ?? null,
      tableRows: report ? report.querySelectorAll('.npu-table tbody tr.npu-row').length : 0,
      tableCount: report?.querySelector('.npu-table-count')?.textContent ?? null,
      // The labelled facts of every report in the cell (run, files, costliest ops, notes).
      facts: [...el.querySelectorAll('.npu-report .npu-fact')].map(li => li.textContent),
      graphOps: report ? report.querySelectorAll('.npu-graph svg g.npu-op, .npu-graph svg g[data-key]').length : 0
    };
  });
}

/** The <select> of one panel option, found by its label (exact text, so not precision_mode_v2). */
async function panelSelect(cell, key) {
  const handle = await cell.evaluateHandle((el, key) => {
    for (const box of el.querySelectorAll('.widget-dropdown')) {
      const label = box.querySelector('label');
      if (label && label.textContent.trim() === key) {
        return box.querySelector('select');
      }
    }
    return null;
  }, key);
  return handle.asElement();
}

/**
 * Where the note of the chosen value (`<value>: what it does`) sits against the cell's output area:
 * its right edge, the output area's, and whether its text is wider than its box (cut off).
 */
async function noteFit(cell, value) {
  return cell.evaluate((el, value) => {
    const area = el.querySelector('.jp-OutputArea-output');
    const notes = [...el.querySelectorAll('.widget-html-content')].filter(n => n.innerText.trim().startsWith(`${value}:`));
    if (!area || notes.length === 0) {
      return null;
    }
    const note = notes[0];
    const line = note.firstElementChild ?? note;
    const boxes = [];
    for (let node = note; node && node !== area; node = node.parentElement) {
      if (node.scrollWidth > node.clientWidth + 1) {
        boxes.push(node.className);
      }
    }
    return {
      text: note.innerText.trim(),
      noteRight: note.getBoundingClientRect().right,
      areaRight: area.getBoundingClientRect().right,
      lineHeight: parseFloat(getComputedStyle(line).lineHeight) || 0,
      height: line.getBoundingClientRect().height,
      overflowing: boxes
    };
  }, value);
}

async function screenshotAt(page, cell, name) {
  // Put the cell's top at the top of the notebook's scroll area, then take the whole page.
  await cell.evaluate(el => el.scrollIntoView({ block: 'start' }));
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(cfg.artifacts, name), fullPage: true });
}

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1100 } });
  const page = await context.newPage();
  page.on('pageerror', err => results.pageErrors.push(String(err)));
  page.on('console', msg => {
    if (msg.type() === 'error') {
      results.consoleErrors.push(msg.text().slice(0, 500));
    }
  });
  page.on('dialog', dialog => {
    if (dialog.type() !== 'beforeunload') {
      results.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    }
    dialog.dismiss().catch(() => {});
  });

  await page.goto(`${cfg.base}/lab/tree/${encodeURIComponent(cfg.notebook)}?reset&token=${cfg.token}`);
  await page.locator('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status="idle"]').waitFor({
    timeout: RUN_TIMEOUT
  });
  mark('kernelIdle');
  // JupyterLab may ask which kernel to use; a new user accepts the proposed "Python 3 (ipykernel)".
  const kernelDialog = page.locator('.jp-Dialog', { hasText: 'Select Kernel' });
  await kernelDialog.waitFor({ timeout: 3_000 }).catch(() => {});
  results.kernelDialog = (await kernelDialog.count()) > 0;
  if (results.kernelDialog) {
    results.kernelDialogText = await kernelDialog.innerText();
    await kernelDialog.locator('.jp-Dialog-button.jp-mod-accept').click();
    await kernelDialog.waitFor({ state: 'detached', timeout: 10_000 });
    await page.locator('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status="idle"]').waitFor({
      timeout: RUN_TIMEOUT
    });
  }

  // Run → Run All Cells, as a user would from the menu bar.
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Run All Cells$/ }).click();
  // The run has started once some prompt shows [*].
  await page
    .waitForFunction(
      () => [...document.querySelectorAll('.jp-NotebookPanel .jp-InputArea-prompt')].some(p => p.textContent.includes('*')),
      null,
      { timeout: 20_000, polling: 100 }
    )
    .catch(() => {});
  await waitForRunDone(page, RUN_TIMEOUT);
  mark('runAllDone');
  // Widget views and the report renderer attach asynchronously after the outputs arrive.
  await cellAt(page, cfg.cells.panel).locator('.widget-dropdown select').first().waitFor({ timeout: 30_000 }).catch(() => {});
  await cellAt(page, cfg.cells.train).locator('.npu-report .npu-summary').first().waitFor({ timeout: 30_000 }).catch(() => {});
  await page.waitForTimeout(500);

  results.cells = {};
  for (const [name, index] of Object.entries(cfg.cells)) {
    results.cells[name] = await outputsOf(cellAt(page, index));
  }
  results.allPrompts = await page.evaluate(() =>
    [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent)
  );

  // Screenshots of what Run All produced.
  await screenshotAt(page, cellAt(page, cfg.cells.error - 1), 'live_error.png');
  await screenshotAt(page, cellAt(page, cfg.cells.train), 'live_report.png');
  // Whole cells for a closer look at every output: a window tall enough to hold each, then back.
  await page.setViewportSize({ width: 1400, height: 3600 });
  await screenshotAt(page, cellAt(page, cfg.cells.train), 'live_report_cell.png');
  await screenshotAt(page, cellAt(page, cfg.cells.explain), 'live_explain_cell.png');
  await page.setViewportSize({ width: 1400, height: 1100 });

  // The panel: open its Precision tab and pick another precision_mode.
  const panelCell = cellAt(page, cfg.cells.panel);
  const precisionTab = panelCell.locator('.lm-TabBar-tab', { hasText: /^Precision$/ }).first();
  results.panel = { precisionTab: (await precisionTab.count()) > 0 };
  if (results.panel.precisionTab) {
    await precisionTab.click();
    await page.waitForTimeout(800);
  }
  const select = await panelSelect(panelCell, 'precision_mode');
  results.panel.selectFound = select !== null;
  if (select !== null) {
    results.panel.before = await select.evaluate(s => s.options[s.selectedIndex]?.textContent ?? null);
    results.panel.choices = await select.evaluate(s => [...s.options].map(o => o.textContent));
    await select.selectOption({ label: cfg.newPrecision });
    await page.waitForTimeout(800);
    results.panel.after = await select.evaluate(s => s.options[s.selectedIndex]?.textContent ?? null);
  }
  results.panel.noteFit = await noteFit(panelCell, cfg.newPrecision);
  results.panel.status = await panelCell.evaluate(el => {
    const htmls = [...el.querySelectorAll('.widget-html-content')].map(h => h.innerText.trim()).filter(Boolean);
    return htmls.slice(0, 6);
  });
  await screenshotAt(page, panelCell, 'live_panel.png');

  // Re-run the probe cell: it prints current_config().precision_mode.
  const probe = cellAt(page, cfg.cells.probe);
  const probeBefore = results.cells.probe.text;
  await probe.locator('.jp-InputArea-editor').click();
  await page.keyboard.press('Shift+Enter');
  await page
    .waitForFunction(
      ([sel, index, before]) => {
        const cells = document.querySelectorAll(sel);
        const cell = cells[index];
        const prompt = cell?.querySelector('.jp-InputArea-prompt')?.textContent ?? '';
        const text = [...(cell?.querySelectorAll('.jp-OutputArea-output') ?? [])].map(o => o.innerText).join('\n');
        return /\[\d+\]/.test(prompt) && text !== before && text.trim() !== '';
      },
      [CELLS, cfg.cells.probe, probeBefore],
      { timeout: 60_000, polling: 250 }
    )
    .catch(() => {});
  results.probeAfterPanel = await outputsOf(probe);
  mark('done');
} catch (err) {
  results.fatal = String(err && err.stack ? err.stack : err);
  // What the page looked like when it gave up, for the failure message.
  try {
    const page = browser.contexts()[0]?.pages()[0];
    if (page) {
      results.atFailure = await page.evaluate(() => ({
        indicator: document.querySelector('.jp-Notebook-ExecutionIndicator')?.getAttribute('data-status') ?? null,
        prompts: [...document.querySelectorAll('.jp-NotebookPanel .jp-InputArea-prompt')].map(p => p.textContent),
        dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText.slice(0, 300))
      }));
      await page.screenshot({ path: join(cfg.artifacts, 'live_failure.png'), fullPage: true });
    }
  } catch (inner) {
    results.atFailure = String(inner);
  }
} finally {
  await browser.close();
}

process.stdout.write(JSON.stringify(results) + '\n');
