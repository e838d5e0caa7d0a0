/**
 * What each box in the graph reads. One layout for every op box, so a person learns it once:
 * line 1 the op's short name, line 2 always its type, line 3 the dtype change only when the
 * precision changed. The short name is the last segment of the op's name, lengthened with its
 * parent segments only where boxes drawn side by side would otherwise read the same (three
 * "ReadVariableOp" boxes become "MatMul/ReadVariableOp", "add/ReadVariableOp", ...).
 */

import { changedPrecision, dtypeText } from './optext';
import type { Report } from './schema';
import type { ScopeNode, ScopeTree } from './scopes';

export interface BoxLines {
  /** Short name (ops) or scope label. */
  name: string;
  /** Op type (ops) or "N ops" (scopes). */
  kind: string;
  /** "float32 → float16" when an op's dtype changed; empty otherwise. */
  change: string;
}

/** "1 op", "2 ops": counts read as a person would say them. */
export function plural(n: number, singular: string, many = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : many}`;
}

/** The last `count` segments of a slash-separated name (the whole name when it has fewer). */
function tail(name: string, count: number): string {
  const parts = name.split('/');
  return parts.slice(Math.max(0, parts.length - count)).join('/');
}

/**
 * Short names for ops that are children of the same scope box: each the fewest trailing
 * segments of its name that no sibling shares. Names that are equal in full stay equal.
 */
export function siblingNames(names: readonly string[]): string[] {
  const depth = names.map(() => 1);
  for (;;) {
    const short = names.map((n, k) => tail(n, depth[k]));
    const seen = new Map<string, number[]>();
    short.forEach((label, k) => seen.set(label, [...(seen.get(label) ?? []), k]));
    let grew = false;
    for (const group of seen.values()) {
      if (group.length < 2) {
        continue;
      }
      for (const k of group) {
        if (tail(names[k], depth[k] + 1) !== short[k]) {
          depth[k] += 1;
          grew = true;
        }
      }
    }
    if (!grew) {
      return short;
    }
  }
}

/** Short name of every op, disambiguated among the ops drawn next to it (same parent box). */
export function opShortNames(report: Report, tree: ScopeTree): string[] {
  const out: string[] = report.ops.map(op => tail(op.n, 1));
  const visit = (scope: ScopeNode): void => {
    const ops: number[] = [];
    for (const child of scope.children) {
      if (child.kind === 'op') {
        ops.push(child.op);
      } else {
        visit(child.scope);
      }
    }
    const names = siblingNames(ops.map(k => report.ops[k].n));
    ops.forEach((k, j) => (out[k] = names[j]));
  };
  visit(tree.root);
  return out;
}

/** The three lines of an op box. */
export function opLines(report: Report, shortNames: readonly string[], op: number): BoxLines {
  const o = report.ops[op];
  return {
    name: shortNames[op],
    kind: o.t,
    change: changedPrecision(o) ? dtypeText(o) : ''
  };
}

/** The lines of a collapsed scope box or the label of an expanded scope's frame. */
export function scopeLines(scope: ScopeNode): BoxLines {
  return { name: scope.label, kind: plural(scope.total, 'op'), change: '' };
}
