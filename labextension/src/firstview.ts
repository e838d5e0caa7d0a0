/**
 * What the graph view shows before anyone touches it: readable boxes around the op that needs
 * attention, rather than the whole drawing shrunk to the cell.
 *
 * Why this design. A Keras 3 train step is ~150-300 ops, most of them the optimizer's and the
 * metrics' bookkeeping at the top of its function, with no layer scopes to fold them into. Fitted
 * to a 1,000 px cell its drawing (about 2,100 px wide) rendered 11 px labels at 5 px: the whole
 * outline, not one name readable, and the op the lead box names somewhere in it. Two other ways were
 * weighed. Opening fewer scopes was tried and reverted: it made the view worse, since the width
 * comes from the flat level itself (18 resource inputs side by side in one row). Grouping the flat
 * level into synthetic boxes (by
 * name prefix, by layer) would make the outline small, but the payload names no layers, a Keras
 * step's top-level names share no useful prefix ("Cast_3", "Add_2", "strided_slice"), and every box
 * a person must open before seeing an op is a click away from the op the lead box just named.
 *
 * So the first view never draws text below `LEGIBLE_PX`: a drawing that fits the cell at that scale
 * is fitted to the cell exactly as before (small graphs are unchanged); a wider one is drawn at the
 * largest scale that fits but not below `READABLE_ZOOM`, scrolls, and opens centred on the lead op
 * (the first overflow, host op that computes, AI CPU op, then precision change -- the order of the
 * lead box). "fit" still shows the whole drawing, as small as it must be.
 */

import { aiCpuOps, changedOps, hostComputeOps, overflowOps } from './lead';
import type { Report } from './schema';

/** Smallest text a person reads without zooming, in CSS px. */
export const LEGIBLE_PX = 9;
/** The smallest text in a box: `.npu-graph .npu-sublabel` in style/base.css (labels are 11 px). */
export const SUBLABEL_PX = 10;
/** The scale at which a box's smallest text renders at `LEGIBLE_PX`: the first view never goes below. */
export const READABLE_ZOOM = LEGIBLE_PX / SUBLABEL_PX;

/** Ops of each kind the first view opens scopes for. */
const OPENED_PER_KIND = 6;

/**
 * The ops the first view should draw as ops, most urgent first: the ones that went inf/NaN, the
 * host ops that compute (a mixed-computing run's point), the AI CPU ops, then the ops whose
 * precision changed -- in a Keras train step those are the user's layers (convolutions, matmuls),
 * not the optimizer's and the iterator's bookkeeping around them.
 */
export function attentionOps(report: Report): number[] {
  const seen = new Set<number>();
  const out: number[] = [];
  for (const group of [overflowOps(report), hostComputeOps(report), aiCpuOps(report), changedOps(report)]) {
    for (const op of group.slice(0, OPENED_PER_KIND)) {
      if (!seen.has(op)) {
        seen.add(op);
        out.push(op);
      }
    }
  }
  return out;
}

/** The op a wide first view is centred on (the most urgent of `attentionOps`), or null. */
export function leadOp(report: Report): number | null {
  return attentionOps(report)[0] ?? null;
}

/**
 * The scale of the first view for a drawing `drawingWidth` px wide (at natural size) in a view
 * `viewWidth` px wide: fitted to the width, never above natural size, never below `READABLE_ZOOM`.
 */
export function firstScale(drawingWidth: number, viewWidth: number): number {
  if (!(viewWidth > 0)) {
    return 1;
  }
  return Math.min(1, Math.max(READABLE_ZOOM, viewWidth / Math.max(1, drawingWidth)));
}

/** Whether the first view is wider than its cell (drawn at the readable scale, so it scrolls sideways). */
export function scrollsSideways(drawingWidth: number, viewWidth: number): boolean {
  return viewWidth > 0 && drawingWidth * firstScale(drawingWidth, viewWidth) > viewWidth + 0.5;
}

/** Scroll offsets that put the centre of `box` (natural px) in the middle of a view, at `scale`. */
export function centredOn(
  box: { x: number; y: number; width: number; height: number },
  scale: number,
  view: { width: number; height: number }
): { left: number; top: number } {
  return {
    left: Math.max(0, Math.round((box.x + box.width / 2) * scale - view.width / 2)),
    top: Math.max(0, Math.round((box.y + box.height / 2) * scale - view.height / 2))
  };
}
