"""Renderers of plans and run reports: the versioned JSON payload (``mime``) and its ``html`` and ``text``
fallbacks, the costliest-ops ``chart``, and the ``%npu`` ``config_view``. Everything user-supplied is
escaped here; nothing in this package imports TensorFlow.
"""
