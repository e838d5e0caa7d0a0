"""The TF1 adapter's names (``npu_bridge``, CANN's ``hccl``) on one emulated device: sessions, also
monitored ones, become emulator sessions (:mod:`.sessions`); :mod:`.run_config`, :mod:`.loss_scale`,
:mod:`.optimizers`, :mod:`.npu_ops`, :mod:`.resources`, :mod:`.rank_values` and :mod:`.hccl_api` (one
rank), :mod:`.iteration_loop` and :mod:`.graph_exec` (``util``), :mod:`.dropout_swap`, :mod:`.estimator`.
"""
