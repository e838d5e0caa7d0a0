"""The TF2 adapter's names (``npu_device``) on one emulated device: :mod:`.options` (the options tree,
``tf2_options.json``), :mod:`.device` (``open().as_default()``: traced functions emulated),
:mod:`.loss_scale`, :mod:`.distribute` (one rank), :mod:`.ops`.
"""
