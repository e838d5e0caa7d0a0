import { describe, expect, it } from 'vitest';

import { parseReport } from '../src/parse';
import { payload, smallTraining } from './fixtures';

describe('parseReport', () => {
  it('accepts a version 1 payload and keeps its ops in order', () => {
    const result = parseReport(smallTraining());
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.report.ops.map(o => o.t).slice(0, 2)).toEqual(['Placeholder', 'MatMul']);
      expect(result.report.summary.precision_changed).toBe(4);
    }
  });

  it('reports an unknown version as unsupported, naming the version', () => {
    const result = parseReport({ ...smallTraining(), version: 2 });
    expect(result).toMatchObject({ ok: false, unsupportedVersion: 2 });
    expect(!result.ok && result.message).toMatch(/^unsupported report version 2\b/);
  });

  it('refuses a payload of another schema', () => {
    const result = parseReport({ ...smallTraining(), schema: 'something.else' });
    expect(!result.ok && result.message).toMatch(/"schema" must be "npu-jupyter.report"/);
  });

  it('refuses non-objects', () => {
    for (const bad of [null, 3, 'x', [smallTraining()]]) {
      expect(parseReport(bad).ok).toBe(false);
    }
  });

  it('names the field when an input index points past the ops', () => {
    const bad = payload([{ n: 'a' }, { n: 'b', i: [7] }]);
    const result = parseReport(bad);
    expect(!result.ok && result.message).toBe('invalid report payload: ops[1].i[0]: expected an index in 0..1, got 7');
  });

  it('names the field when an op points past the functions of its call tree', () => {
    const p = payload([{ n: 'a' }, { n: 'b' }], { functions: [{ name: 'f', label: 'f', ops: 2 }] });
    (p.ops as Record<string, unknown>[])[1].f = 1;
    const r = parseReport(p);
    expect(r.ok ? '' : r.message).toContain('ops[1].f');
  });

  it('names the field when a reason index is out of range', () => {
    const result = parseReport(payload([{ n: 'a', pr: 99 }]));
    expect(!result.ok && result.message).toMatch(/ops\[0\]\.pr/);
  });

  it('refuses an unknown engine', () => {
    const bad = payload([{ n: 'a' }]);
    (bad.ops as Record<string, unknown>[])[0].e = 'GPU';
    const result = parseReport(bad);
    expect(!result.ok && result.message).toMatch(/ops\[0\]\.e: expected one of AI_CORE, AI_CPU, HOST/);
  });

  it('refuses an op name that is not a string (no objects smuggled into text)', () => {
    const bad = payload([{ n: 'a' }]);
    (bad.ops as Record<string, unknown>[])[0].n = { toString: 'x' };
    expect(parseReport(bad).ok).toBe(false);
  });

  it('accepts run fields and a run block', () => {
    const run = payload([{ n: 'a', us: 12.5 }], {
      kind: 'run',
      run: {
        backend: 'emulator',
        steps: 2,
        wall_ms: 3.5,
        reference_wall_ms: null,
        first_overflow: null,
        dump_dir: '/tmp/d',
        trace_file: null,
        op_summary_csv: null
      }
    });
    (run.ops as Record<string, unknown>[])[0].dr = { max_abs: 0.1, max_rel: 0.01, cos: 0.99 };
    (run.ops as Record<string, unknown>[])[0].ov = true;
    const result = parseReport(run);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.report.ops[0]).toMatchObject({ us: 12.5, ov: true, dr: { max_rel: 0.01 } });
      expect(result.report.run?.dump_dir).toBe('/tmp/d');
    }
  });

  it('allows -1 as cluster of host ops and null transfer bytes', () => {
    const p = payload([{ n: 'a', e: 'HOST', c: -1 }, { n: 'b', i: [0] }]);
    p.transfers = [{ s: 0, d: 1, dt: 'float32', b: null, dir: 'h2d' }];
    expect(parseReport(p).ok).toBe(true);
    p.transfers = [{ s: 0, d: 1, dt: 'float32', b: 4, dir: 'sideways' }];
    expect(parseReport(p).ok).toBe(false);
  });

  it("reads a transfer's output slot, and none from a report written before the field", () => {
    const p = payload([{ n: 'a', e: 'HOST', c: -1 }, { n: 'b', i: [0] }]);
    p.transfers = [{ s: 0, o: 1, d: 1, dt: 'float32', b: 4, dir: 'h2d' }];
    const r = parseReport(p);
    expect(r.ok && r.report.transfers[0].o).toBe(1);
    p.transfers = [{ s: 0, d: 1, dt: 'float32', b: 4, dir: 'h2d' }];
    const old = parseReport(p);
    expect(old.ok && old.report.transfers[0].o).toBeUndefined();
    p.transfers = [{ s: 0, o: -1, d: 1, dt: 'float32', b: 4, dir: 'h2d' }];
    expect(parseReport(p).ok).toBe(false);
  });

  it('reads the shipped facts, and none from a payload written before them', () => {
    const fact = { key: 'run.dump_dir', label: 'Dump folder', text: 'npu_dump', tone: 'path' };
    const r = parseReport(payload([{ n: 'a' }], { facts: [fact] }));
    expect(r.ok && r.report.facts).toEqual([fact]);
    const old = parseReport(payload([{ n: 'a' }]));
    expect(old.ok && old.report.facts).toEqual([]);
  });

  it('names the field when a fact has an unknown tone or a text that is not a string', () => {
    const tone = parseReport(payload([{ n: 'a' }], { facts: [{ key: 'k', label: 'l', text: 't', tone: 'shout' }] }));
    expect(!tone.ok && tone.message).toMatch(/^invalid report payload: facts\[0\]\.tone: expected one of/);
    const text = parseReport(payload([{ n: 'a' }], { facts: [{ key: 'k', label: 'l', text: 3, tone: '' }] }));
    expect(!text.ok && text.message).toBe('invalid report payload: facts[0].text: expected a string');
  });

  it('keeps the reference runs\' extra drift metrics and refuses a config value that is an object', () => {
    const p = payload([{ n: 'a', us: 1 }]);
    (p.ops as Record<string, unknown>[])[0].dr = { max_abs: 0.1, max_rel: 0.2, cos: 0.9, rmse: 0.05, accumulated_rel: 0.01 };
    const r = parseReport(p);
    expect(r.ok && r.report.ops[0].dr).toEqual({ max_abs: 0.1, max_rel: 0.2, cos: 0.9, rmse: 0.05, accumulated_rel: 0.01 });
    const bad = parseReport(payload([{ n: 'a' }], { config: { precision_mode: { nested: true } } }));
    expect(!bad.ok && bad.message).toBe('invalid report payload: config.precision_mode: expected a boolean, number, string or null');
  });
});
