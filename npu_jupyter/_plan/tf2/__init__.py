"""Placement as the TF2 adapter (``npu_device``) decides it for a ``tf.function`` graph: :mod:`.placement`
(NPU clusters or the CPU) with :mod:`.node_placer` (its NodePlacer in mix mode, data in
``tf2_placement.json``).
"""
