/**
 * The JupyterLab view shows every report field the HTML and text fallbacks show.
 *
 * `parity-payload.json` is written by tests/display/test_view_parity.py: a payload with every field
 * of docs/report-schema.md set to a unique marker, and the text each field must put on screen. The
 * Python test checks the same markers in the HTML and text views; this one checks the Lab view, so a
 * field one view renders and another does not fails one of the two.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';

import { parseReport } from '../src/parse';
import { renderReport } from '../src/view';

interface Parity {
  payload: Record<string, unknown>;
  markers: { field: string; text: string }[];
  lab_only: Record<string, string>;
}

const parity: Parity = JSON.parse(readFileSync(join(__dirname, 'parity-payload.json'), 'utf8'));

describe('parity with the HTML and text views', () => {
  let host: HTMLElement;
  beforeEach(() => {
    document.body.replaceChildren();
    host = document.createElement('div');
    document.body.append(host);
  });

  it('keeps every field of the marker payload when parsing (none dropped, none added)', () => {
    const parsed = parseReport(parity.payload);
    expect(parsed.ok ? '' : parsed.message).toBe('');
    expect(parsed.ok && JSON.parse(JSON.stringify(parsed.report))).toEqual(parity.payload);
  });

  it('shows every marked field', () => {
    expect(renderReport(host, parity.payload)).not.toBeNull();
    const shown = host.textContent ?? '';
    const missing = parity.markers.flatMap(m => m.text.split('|').filter(part => !shown.includes(part)).map(part => `${m.field}: ${part}`));
    expect(missing).toEqual([]);
  });

  it('shows the fields the fallbacks leave out (cluster names)', () => {
    renderReport(host, parity.payload);
    expect(parity.lab_only['clusters[].name']).toBeTruthy();
    expect(host.textContent).toContain('GeOp-cluster-marker');
  });
});
