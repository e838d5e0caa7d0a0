"""The decision engine: graph + config + op tables in, placement/precision/partition out.

``npu_jupyter.plan`` is both this subpackage and the public function ``plan(graph, config)``. Python
binds a subpackage as an attribute of its parent as soon as any of its modules is imported (for
example ``npu_jupyter.plan.model`` by the runtime), which would shadow the lazily exported function.
Making the package module itself callable keeps ``npu_jupyter.plan(graph, ...)`` working in either
order, without importing TensorFlow here.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, graph: Any, config: Any = None, *, fetches: Any = None, soc: str | None = None) -> Any:
        from npu_jupyter.plan.planner import plan

        return plan(graph, config, fetches=fetches, soc=soc)


sys.modules[__name__].__class__ = _CallablePackage
