"""The ``ascend`` backend: a real ``tf.compat.v1.Session`` with the NpuOptimizer config (:mod:`.backend`),
what the real adapter wrote (:mod:`.adapter_outputs`) and the graph engine's own graph dumps
(:mod:`.ge_dump`), set next to the prediction.
"""
