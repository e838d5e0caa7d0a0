/**
 * Report payloads for the tests, written the way `npu_jupyter._display.mime.report_payload`
 * writes them (docs/report-schema.md): plain JSON objects, so the parser is exercised too. They carry
 * no `facts` (the lines Python computes) unless a test adds the ones it draws.
 */

export interface OpSpec {
  n: string;
  t?: string;
  e?: 'AI_CORE' | 'AI_CPU' | 'HOST';
  d0?: string;
  d1?: string;
  c?: number;
  pr?: number;
  xr?: number;
  i?: number[];
  us?: number;
}

/** A version-1 payload around the given ops, with summary counts computed from them. */
export function payload(ops: OpSpec[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const full = ops.map(o => ({
    n: o.n,
    t: o.t ?? 'Identity',
    e: o.e ?? 'AI_CORE',
    d0: o.d0 ?? 'float32',
    d1: o.d1 ?? o.d0 ?? 'float32',
    c: o.c ?? ((o.e ?? 'AI_CORE') === 'HOST' ? -1 : 0),
    pr: o.pr ?? 0,
    xr: o.xr ?? 1,
    i: o.i ?? [],
    ...(o.us !== undefined ? { us: o.us } : {})
  }));
  return {
    schema: 'npu-jupyter.report',
    version: 1,
    kind: 'plan',
    title: 'Plan of train_op (Ascend910, allow_fp32_to_fp16)',
    soc: 'Ascend910',
    config: { precision_mode: 'allow_fp32_to_fp16' },
    effective_precision_mode: 'allow_fp32_to_fp16',
    summary: {
      ops: full.length,
      ai_core: full.filter(o => o.e === 'AI_CORE').length,
      ai_cpu: full.filter(o => o.e === 'AI_CPU').length,
      host: full.filter(o => o.e === 'HOST').length,
      precision_changed: full.filter(o => o.d0 !== o.d1).length,
      clusters: 1,
      transfers: 0,
      transfer_bytes: 0
    },
    reasons: ['supported on AI Core', 'kept float32', 'no AI Core kernel: AI CPU', 'white list: float16'],
    clusters: [{ name: 'GeOp1_0', size: full.filter(o => o.c === 0).length }],
    ops: full,
    transfers: [],
    warnings: [],
    errors: [],
    truncated: false,
    ...extra
  };
}

/** A small training-like graph: forward layers, their gradients, optimizer updates. */
export function smallTraining(): Record<string, unknown> {
  const ops: OpSpec[] = [
    { n: 'input', t: 'Placeholder', e: 'HOST', c: -1 },
    { n: 'model/dense/MatMul', t: 'MatMul', d1: 'float16', xr: 3, i: [0] },
    { n: 'model/dense/BiasAdd', t: 'BiasAdd', i: [1] },
    { n: 'model/dense_1/MatMul', t: 'MatMul', d1: 'float16', xr: 3, i: [2] },
    { n: 'loss/Mean', t: 'Mean', i: [3] },
    { n: 'gradients/model/dense_1/MatMul_grad/MatMul', t: 'MatMul', d1: 'float16', xr: 3, i: [4, 2] },
    { n: 'gradients/model/dense/MatMul_grad/MatMul', t: 'MatMul', d1: 'float16', xr: 3, i: [5, 0] },
    { n: 'SGD/update_dense/ApplyGradientDescent', t: 'ApplyGradientDescent', e: 'AI_CPU', pr: 2, i: [6] },
    { n: 'SGD', t: 'NoOp', e: 'HOST', c: -1, d0: '', d1: '', i: [7] }
  ];
  return payload(ops);
}
