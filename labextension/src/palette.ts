/**
 * Colour categories for ops, as CSS class names. The colours themselves live in style/base.css
 * (built on JupyterLab theme variables), so the light and dark themes both apply and switching
 * between "by placement" and "by precision" only flips one class on the view.
 */

import type { Engine, Op } from './schema';

export type ColourMode = 'placement' | 'precision';

export type PrecisionCategory = 'to-fp16' | 'to-bf16' | 'to-fp32' | 'changed' | 'kept-float' | 'non-float';

export const ENGINE_LABELS: Record<Engine, string> = {
  AI_CORE: 'AI Core',
  AI_CPU: 'AI CPU',
  HOST: 'Host'
};

export const PRECISION_LABELS: Record<PrecisionCategory, string> = {
  'to-fp16': 'to float16',
  'to-bf16': 'to bfloat16',
  'to-fp32': 'to float32',
  changed: 'other change',
  'kept-float': 'float kept',
  'non-float': 'not float'
};

const FLOATS = new Set(['float16', 'bfloat16', 'float32', 'float64', 'half', 'float', 'double']);

/** Which precision story an op tells: what it was changed to, or that it kept its dtype. */
export function precisionCategory(op: Op): PrecisionCategory {
  if (op.d0 !== op.d1) {
    if (op.d1 === 'float16') {
      return 'to-fp16';
    }
    if (op.d1 === 'bfloat16') {
      return 'to-bf16';
    }
    if (op.d1 === 'float32') {
      return 'to-fp32';
    }
    return 'changed';
  }
  return FLOATS.has(op.d1) ? 'kept-float' : 'non-float';
}

export function engineClass(e: Engine): string {
  return `npu-e-${e.toLowerCase().replace('_', '-')}`;
}

export function precisionClass(c: PrecisionCategory): string {
  return `npu-p-${c}`;
}

/** Both colour classes of an op; CSS picks the one of the active mode. */
export function opClasses(op: Op): string {
  // An op that went inf/NaN is outlined in either colouring: it is where to look first.
  return `${engineClass(op.e)} ${precisionClass(precisionCategory(op))}${op.ov ? ' npu-overflow' : ''}`;
}
