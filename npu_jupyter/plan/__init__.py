"""The decision engine: graph + config + op tables in, placement/precision/partition out.

``npu_jupyter.plan`` is both this subpackage and the public function ``plan(graph, config)``. Python
binds a subpackage as an attribute of its parent as soon as any of its modules is imported (for
example ``npu_jupyter.plan.model`` by the runtime), which would shadow the lazily exported function.
Making the package module itself callable keeps ``npu_jupyter.plan(graph, ...)`` working in either
order, without importing TensorFlow here.

Modules, in pipeline order (:mod:`planner` runs them):

* reading the graph: :mod:`view` (entry) builds a :mod:`graph` view (the node types) with
  :mod:`node_reading` (NodeDefs), :mod:`op_recipes` (per-type OpDef recipes), :mod:`topology`
  (ordering, pruning) and :mod:`fetches` (what a ``Session.run`` fetch structure names);
* :mod:`placement` (candidates and host propagation) with :mod:`rewrites` (ops TF or the adapter
  rewrite before partitioning); :mod:`tf2_placement` instead for ``plan(..., adapter="tf2")`` (the
  TF2 adapter's npu_device NodePlacer);
* :mod:`partition` (GeOps, transfers, cut-off findings) with :mod:`clustering` (the algorithm);
* :mod:`precision` with :mod:`precision_files` (mixlist, customize_dtypes, op_precision_mode);
* :mod:`settings` (the options read), :mod:`model` (the Plan records every later stage reads).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from npu_jupyter.options.config import ConfigSource
    from npu_jupyter.plan.model import Plan
    from npu_jupyter.tf_types import ConcreteFunction, Graph, GraphDef


class _CallablePackage(types.ModuleType):
    def __call__(
        self,
        graph: Graph | GraphDef | ConcreteFunction,
        config: ConfigSource = None,
        *,
        fetches: object = None,
        soc: str | None = None,
        adapter: str = "tf1",
    ) -> Plan:
        from npu_jupyter.plan.planner import plan

        return plan(graph, config, fetches=fetches, soc=soc, adapter=adapter)


sys.modules[__name__].__class__ = _CallablePackage
