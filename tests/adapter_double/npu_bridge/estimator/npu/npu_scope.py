"""Double of ``npu_scope``: the two scopes scripts use most, stamping the adapter's attributes."""

from __future__ import annotations

from npu_jupyter.scope import keep_dtype_scope, without_npu_compile_scope  # noqa: F401 - same attributes
