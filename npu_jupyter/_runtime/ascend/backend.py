"""The ``ascend`` backend: a real ``tf.compat.v1.Session`` with the NpuOptimizer config.

The adapter does the work (placement, precision, dump, profiling happen on the device and land in
``dump_path`` / ``profiling_options.output`` as the adapter writes them). This subclass only adds what
the notebook shows for either backend: a :class:`RunReport` per run, with the planner's *prediction*
of the adapter's decisions and the wall-clock time of each ``session.run`` measured on the host (the
device's work is inside it, but it is not a device kernel time: the adapter's profiling output has
those), on ``last_report`` / ``reports``.

Imported only by :func:`npu_jupyter._runtime.backends.session` (TensorFlow is needed by then).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from npu_jupyter._tensorflow_import import require_tensorflow

require_tensorflow("the ascend backend")  # one clear error when TensorFlow is missing
from tensorflow.python.client.session import Session

from npu_jupyter._runtime.observe.fetch_map import feed_shapes
from npu_jupyter._runtime.observe.step_record import StepRecord, add_time
from npu_jupyter._runtime.report import RunReport
from npu_jupyter.cost.attach import Memo, PendingEstimate

if TYPE_CHECKING:
    from npu_jupyter._options.config import ConfigSource
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.observe.fetch_map import FeedDict
    from npu_jupyter._tf_types import ConfigProto, Graph


# TF's class itself: ``tf.compat.v1.Session`` may be a %%npu cell's stand-in when this module loads.
class AscendSession(Session):
    """``tf.compat.v1.Session`` that records a RunReport per ``run``."""

    backend = "ascend"

    def __init__(
        self, npu_config: ConfigSource, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        super().__init__(target=target, graph=graph, config=config)
        self.npu_config = npu_config
        self.reports: list[RunReport] = []
        self.last_report: RunReport | None = None
        self._plans: dict[tuple[int, tuple[str, ...]], Plan] = {}
        self._created = time.time()  # GE graph dumps older than the session are not this session's
        self._estimates: Memo = {}  # the cost model's estimate per plan, shared by the plan's reports
        self._runs: dict[int, int] = {}  # id of a plan in _plans -> how often its graph ran (its next step)

    def run(
        self, fetches: object, feed_dict: FeedDict | None = None, options: object = None, run_metadata: object = None
    ) -> Any:  # noqa: ANN401 - the fetched values, in the structure of ``fetches``
        """Run on the real adapter and record a report of the run (the host's wall-clock time of the call)."""
        start = time.perf_counter()
        results = super().run(fetches, feed_dict, options, run_metadata)
        wall = (time.perf_counter() - start) * 1000.0
        names = _names(fetches)
        plan = self._plan(tuple(names))
        report = self.last_report
        if report is None or report.plan is not plan or report.fetches != names:
            report = self.last_report = self._new_report(plan, names, feed_dict)
            self.reports.append(report)
            del self.reports[:-1000]
        elif not report.fed_shapes_varied and report.fed_shapes is not None:
            report.fed_shapes_varied = feed_shapes(feed_dict) != report.fed_shapes
        step = self._runs[id(plan)] = self._runs.get(id(plan), -1) + 1  # the graph's own step: 0 builds it
        add_time(report, StepRecord("step", ", ".join(names), step, plan, wall))  # as the emulator's
        return results

    def _new_report(self, plan: Plan, names: list[str], feed_dict: FeedDict | None) -> RunReport:
        """A report labelled as a prediction, pointing at the adapter's outputs and GE's actual graph.

        Its estimate is the emulator's for the same run: at the shapes its first run fed, with the
        copies of its feeds and fetches (:mod:`npu_jupyter.cost.attach`).
        """
        from npu_jupyter._runtime.ascend.adapter_outputs import PREDICTION_NOTE, actual_decisions, output_locations

        fed = feed_shapes(feed_dict)
        return RunReport(
            plan=plan,
            backend="ascend",
            fetches=names,
            steps=0,
            wall_ms=0.0,
            predicted=True,
            fed_shapes=fed,
            cost=PendingEstimate(plan, self.graph, fed, self._estimates, names),
            prediction_note=PREDICTION_NOTE,
            adapter_outputs=output_locations(self.npu_config),
            actual=actual_decisions(plan, since=self._created - 1.0),
        )

    def _plan(self, fetches: tuple[str, ...]) -> Plan:
        from npu_jupyter._plan.planner import plan

        key = (self.graph.version, fetches)
        if key not in self._plans:
            self._plans[key] = plan(self.graph, self.npu_config, fetches=list(fetches) or None)
        return self._plans[key]


def _names(fetches: object) -> list[str]:
    """Flattened fetch names (tensor ``op:slot`` or op name), in fetch order."""
    if isinstance(fetches, (list, tuple)):
        return [n for f in fetches for n in _names(f)]
    if isinstance(fetches, dict):
        return [n for f in fetches.values() for n in _names(f)]
    if isinstance(fetches, str):
        return [fetches]
    convert = getattr(fetches, "_as_graph_element", None)
    element = convert() if callable(convert) else fetches
    name = getattr(element if element is not None else fetches, "name", None)
    return [name] if name else []
