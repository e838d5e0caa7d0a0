"""Op capability data per Ascend SoC: bundled tables (``ascend910.json``, ``ascend910b.json``, built by
``tools/build_op_tables.py``) or a real CANN install. Use :func:`npu_jupyter._ops.library.load_library`.
"""
