"""The per-graph dynamic-execution config the adapter reads from node attributes, over the session options.

``util.set_graph_exec_config`` stamps ``_graph_dynamic_input``, ``_graph_dynamic_graph_execute_mode``
(and the shape range, ``_is_train_graph``) on a fetch. The adapter's partition pass walks every node of
the run's graph and copies those attributes into the graph's options (``GetGraphConfig``; a later node
overwrites an earlier one), and takes the session's ``dynamic_input`` / ``dynamic_graph_execute_mode``
only when no node set ``dynamic_input`` (``om_partition_subgraphs_pass.cc``). The merge of GeOps then
follows ``is_set_lazy_recompile`` from those graph options. So a graph marked dynamic + lazy_recompile
plans as that session option does, and a graph marked ``dynamic_input=False`` ignores the session's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npu_jupyter._plan.settings import PlanSettings

if TYPE_CHECKING:
    from npu_jupyter._tf_types import GraphDef

DYNAMIC_INPUT = "_graph_dynamic_input"
EXECUTE_MODE = "_graph_dynamic_graph_execute_mode"


@dataclass(frozen=True)
class GraphExecConfig:
    """The dynamic-execution options a graph's own attributes set, and the node that set them."""

    dynamic_input: bool
    dynamic_graph_execute_mode: str  # "" unless dynamic_input
    node: str


def graph_config(graph_def: GraphDef, kept: set[str] | None, marked: bool = True) -> GraphExecConfig | None:
    """The options of the last marked node, or None when no node is marked.

    ``kept``: the names of the run's nodes (None: all); ``marked`` False (the graph's bytes hold no
    :data:`DYNAMIC_INPUT`, :func:`~npu_jupyter._plan.graph.export.keys_in`) skips the scan.
    """
    if not marked:
        return None
    found = None
    for nd in graph_def.node:
        if DYNAMIC_INPUT not in nd.attr or (kept is not None and nd.name not in kept):
            continue
        dynamic = bool(nd.attr[DYNAMIC_INPUT].b)
        mode = nd.attr[EXECUTE_MODE].s.decode(errors="replace") if dynamic and EXECUTE_MODE in nd.attr else ""
        found = GraphExecConfig(dynamic, mode, nd.name)
    return found


def apply(settings: PlanSettings, config: GraphExecConfig | None) -> tuple[PlanSettings, list[str], list[str]]:
    """(settings with the graph's config over the session's, notes, errors) for the partition pass."""
    if config is None:
        return settings, [], []
    dynamic, mode = config.dynamic_input, config.dynamic_graph_execute_mode
    merged = dataclasses.replace(settings, dynamic_input=dynamic, dynamic_graph_execute_mode=mode or "")
    where = f"node {config.node!r} (util.set_graph_exec_config)"
    said = f"dynamic_input=True, dynamic_graph_execute_mode={mode!r}" if dynamic else "dynamic_input=False"
    notes = [f"Dynamic execution from the graph's own attributes on {where}: {said}, over the session options."]
    errors = []
    if merged.lazy_recompile and not settings.lazy_recompile and merged.iterations_per_loop > 1:  # else said once
        errors.append(
            "iterations_per_loop only support 1 in lazy_recompile mode. Current is: "
            f"{merged.iterations_per_loop} (lazy_recompile set on {where}; the adapter refuses the graph at sess.run)"
        )
    return merged, notes, errors
