import { describe, expect, it } from 'vitest';

import { opLines, opShortNames, plural, siblingNames } from '../src/labels';
import { parseReport } from '../src/parse';
import type { Report } from '../src/schema';
import { buildScopeTree } from '../src/scopes';
import { payload } from './fixtures';

function report(p: Record<string, unknown>): Report {
  const r = parseReport(p);
  if (!r.ok) {
    throw new Error(r.message);
  }
  return r.report;
}

describe('siblingNames', () => {
  it('uses the last segment when it is unique among siblings', () => {
    expect(siblingNames(['dense/MatMul', 'dense/BiasAdd', 'Relu'])).toEqual(['MatMul', 'BiasAdd', 'Relu']);
  });

  it('adds the parent segment to names that collide, and only to those', () => {
    expect(siblingNames(['MatMul/ReadVariableOp', 'add/ReadVariableOp', 'logits/ReadVariableOp', 'x'])).toEqual([
      'MatMul/ReadVariableOp',
      'add/ReadVariableOp',
      'logits/ReadVariableOp',
      'x'
    ]);
  });

  it('keeps adding segments until the colliding names differ', () => {
    expect(siblingNames(['a/k/Read/ReadVariableOp', 'b/k/Read/ReadVariableOp'])).toEqual([
      'a/k/Read/ReadVariableOp',
      'b/k/Read/ReadVariableOp'
    ]);
    expect(siblingNames(['a/b/x', 'c/b/x', 'y/x'])).toEqual(['a/b/x', 'c/b/x', 'y/x']);
  });
});

describe('opShortNames', () => {
  it('tells apart the ReadVariableOps drawn side by side at the top level', () => {
    // Each ReadVariableOp is alone in its scope, so the scope tree lifts it to the top level.
    const r = report(
      payload([
        { n: 'MatMul/ReadVariableOp', t: 'ReadVariableOp' },
        { n: 'MatMul', t: 'MatMul', i: [0] },
        { n: 'add/ReadVariableOp', t: 'ReadVariableOp' },
        { n: 'add', t: 'AddV2', i: [1, 2] },
        { n: 'dense/MatMul', t: 'MatMul', i: [3] },
        { n: 'dense/BiasAdd', t: 'BiasAdd', i: [4] }
      ])
    );
    const names = opShortNames(r, buildScopeTree(r));
    expect(names).toEqual(['MatMul/ReadVariableOp', 'MatMul', 'add/ReadVariableOp', 'add', 'MatMul', 'BiasAdd']);
  });
});

describe('opLines', () => {
  it('puts the type on line 2 always and the dtype change on line 3 only when it changed', () => {
    const r = report(
      payload([
        { n: 'w/ReadVariableOp', t: 'ReadVariableOp' },
        { n: 'MatMul', t: 'MatMul', d0: 'float32', d1: 'float16', i: [0] }
      ])
    );
    const names = opShortNames(r, buildScopeTree(r));
    expect(opLines(r, names, 0)).toEqual({ name: 'ReadVariableOp', kind: 'ReadVariableOp', change: '' });
    expect(opLines(r, names, 1)).toEqual({ name: 'MatMul', kind: 'MatMul', change: 'float32 \u2192 float16' });
  });
});

describe('plural', () => {
  it('uses the singular for one and the plural otherwise', () => {
    expect(plural(1, 'cluster')).toBe('1 cluster');
    expect(plural(0, 'error')).toBe('0 errors');
    expect(plural(2, 'step')).toBe('2 steps');
    expect(plural(1, 'op')).toBe('1 op');
  });
});
