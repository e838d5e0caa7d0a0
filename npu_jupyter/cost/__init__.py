"""A device cost model: what a plan would roughly cost on the NPU, estimated from published figures.

Nothing here is measured. :func:`estimate` turns a plan and its graph's shapes into per-op estimated
times and a per-step total (a roofline over the SoC's peak rates, ``socs.json``) and the memory the
decided dtypes take, each beside the same graph in float32. ``docs/cost-model.md`` gives the formulas,
the figures' sources and how far to trust them.
"""

from __future__ import annotations

from npu_jupyter.cost.roofline import OpCost, SocFigures, StepCost, estimate, soc_figures

__all__ = ["OpCost", "SocFigures", "StepCost", "estimate", "soc_figures"]
