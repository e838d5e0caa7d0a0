import { describe, expect, it } from 'vitest';

import { parseReport } from '../src/parse';
import type { Report } from '../src/schema';
import { DEFAULT_QUERY, selectRows } from '../src/tabledata';
import { payload, smallTraining } from './fixtures';

function report(p: Record<string, unknown>): Report {
  const r = parseReport(p);
  if (!r.ok) {
    throw new Error(r.message);
  }
  return r.report;
}

const names = (r: Report, rows: number[]): string[] => rows.map(k => r.ops[k].n);

describe('selectRows', () => {
  const r = report(smallTraining());

  it('shows every op, what matters first by default: AI CPU, precision changes, then host plumbing, then the rest', () => {
    // smallTraining: 7 (Shape) runs on AI CPU; MatMuls 1, 3, 5, 6 go to float16; 0 (Placeholder)
    // and 8 (NoOp) stay on the host.
    expect(r.ops[7].e).toBe('AI_CPU');
    expect(selectRows(r, DEFAULT_QUERY)).toEqual([7, 1, 3, 5, 6, 0, 8, 2, 4]);
    expect(selectRows(r, { ...DEFAULT_QUERY, sort: 'index' })).toEqual(r.ops.map((_, k) => k));
  });

  it('puts host ops that compute and the ends of transfers before precision changes', () => {
    const p = smallTraining();
    const ops = p.ops as Record<string, unknown>[];
    ops[7] = { ...ops[7], e: 'HOST', c: -1 };
    p.transfers = [{ s: 7, d: 8, dt: 'float32', b: 16, dir: 'd2h' }];
    (p.transfers as unknown[]).push({ s: 2, d: 7, dt: 'float32', b: 16, dir: 'd2h' });
    const mixed = report(p);
    expect(selectRows(mixed, DEFAULT_QUERY).slice(0, 3)).toEqual([7, 2, 8]);
  });

  it('filters by words found in name, type or reason, case-insensitively', () => {
    expect(names(r, selectRows(r, { ...DEFAULT_QUERY, text: 'GRADIENTS matmul' }))).toEqual([
      'gradients/model/dense_1/MatMul_grad/MatMul',
      'gradients/model/dense/MatMul_grad/MatMul'
    ]);
    expect(names(r, selectRows(r, { ...DEFAULT_QUERY, text: 'ai cpu' }))).toEqual([
      'SGD/update_dense/ApplyGradientDescent'
    ]);
  });

  it('filters by engine and by precision change', () => {
    expect(selectRows(r, { ...DEFAULT_QUERY, engine: 'HOST' })).toEqual([0, 8]);
    expect(selectRows(r, { ...DEFAULT_QUERY, changedOnly: true })).toEqual([1, 3, 5, 6]);
  });

  it('sorts by name both ways, ties in topological order', () => {
    const up = names(r, selectRows(r, { ...DEFAULT_QUERY, sort: 'name' }));
    expect(up).toEqual([...up].sort());
    const down = names(r, selectRows(r, { ...DEFAULT_QUERY, sort: 'name', descending: true }));
    expect(down).toEqual([...up].reverse());
    const byType = selectRows(r, { ...DEFAULT_QUERY, sort: 'type' });
    const matmuls = byType.filter(k => r.ops[k].t === 'MatMul');
    expect(matmuls).toEqual([1, 3, 5, 6]);
  });

  it('puts ops without a time last whichever way time is sorted', () => {
    const t = report(payload([{ n: 'a', us: 5 }, { n: 'b' }, { n: 'c', us: 50 }]));
    expect(selectRows(t, { ...DEFAULT_QUERY, sort: 'time' })).toEqual([0, 2, 1]);
    expect(selectRows(t, { ...DEFAULT_QUERY, sort: 'time', descending: true })).toEqual([2, 0, 1]);
  });

  it('treats filter text as plain words, not patterns', () => {
    const t = report(payload([{ n: 'a.*b' }, { n: 'axxb' }]));
    expect(selectRows(t, { ...DEFAULT_QUERY, text: '.*' })).toEqual([0]);
  });
});

describe('a report on a call tree', () => {
  const tree = (): Report => {
    const p = smallTraining();
    const ops = p.ops as Record<string, unknown>[];
    // ops 5-7 belong to a called function (index 1)
    for (const k of [5, 6, 7]) {
      ops[k] = { ...ops[k], n: `__inference_inner_3/${String(ops[k].n)}`, f: 1 };
    }
    p.functions = [
      { name: '__inference_outer_2', label: 'outer', ops: 6 },
      { name: '__inference_inner_3', label: 'inner', ops: 3 }
    ];
    return report(p);
  };

  it('shows the ops of one function when the function filter picks it, all of them otherwise', () => {
    const r = tree();
    expect(selectRows(r, { ...DEFAULT_QUERY, fn: 1, sort: 'index' })).toEqual([5, 6, 7]);
    expect(selectRows(r, { ...DEFAULT_QUERY, fn: 0, sort: 'index' })).toEqual([0, 1, 2, 3, 4, 8]);
    expect(selectRows(r, { ...DEFAULT_QUERY, sort: 'index' })).toHaveLength(9);
  });

  it('finds an op by the name of its function', () => {
    const r = tree();
    expect(selectRows(r, { ...DEFAULT_QUERY, text: 'inner', sort: 'index' })).toEqual([5, 6, 7]);
  });

  it('sorts the drift column by relative RMSE, the figure it shows, not by the noisy max rel', () => {
    const p = smallTraining();
    const ops = p.ops as Record<string, unknown>[];
    // 1 barely drifted (max rel is large only near zero); 3 drifted as a tensor; 5 is a row written before rel_rmse.
    ops[1] = { ...ops[1], dr: { max_abs: 1e-5, max_rel: 1000, cos: 1, rel_rmse: 1e-5, step: 0 } };
    ops[3] = { ...ops[3], dr: { max_abs: 1, max_rel: 2, cos: 0.5, rel_rmse: 0.7, step: 1 } };
    ops[5] = { ...ops[5], dr: { max_abs: 0.1, max_rel: 0.01, cos: 0.99 } };
    const drifted = report(p);
    expect(selectRows(drifted, { ...DEFAULT_QUERY, sort: 'drift', descending: true }).slice(0, 3)).toEqual([3, 5, 1]);
  });

  it('sorts a cancelled reference by its figure against its inputs\' scale, not by its own rel. RMSE', () => {
    const p = smallTraining();
    const ops = p.ops as Record<string, unknown>[];
    ops[1] = { ...ops[1], dr: { max_abs: 1e-4, max_rel: 9e4, cos: 0.48, rel_rmse: 666, step: 0, in_rel: 0.0016 } };
    ops[3] = { ...ops[3], dr: { max_abs: 1, max_rel: 2, cos: 0.5, rel_rmse: 0.7, step: 1 } };
    expect(selectRows(report(p), { ...DEFAULT_QUERY, sort: 'drift', descending: true }).slice(0, 2)).toEqual([3, 1]);
  });
});
