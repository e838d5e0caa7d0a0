"""The plans an emulator session runs with: one per graph version, config snapshot, phase and run.

The session's ``config`` may change between runs (the panel, ``%%npu`` overrides): every run takes
its :class:`~npu_jupyter._options.snapshot.ConfigSnapshot` (``NpuConfig.snapshot()`` is cached until
an option changes, so this costs a comparison), and plans and run settings are cached against the
snapshot's key. Nothing is stored on the config object. ``accelerate_train_mode`` plans its
reduced-precision phase with its own snapshot. A ``graph_compiler_cache_dir`` keeps plans on disk
across sessions. The default planner is handed only the run graph's ancestors (:mod:`.plan_input`), so
a small new fetch set of a large model plans in proportion to itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Hashable, Tuple, Union

from npu_jupyter._options.snapshot import ConfigSnapshot
from npu_jupyter._runtime.observe.run_settings import RunSettings, read_run_settings
from npu_jupyter._runtime.session.plan_input import planner_input

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import Graph

# Plans per fetch set are dropped whole past this many entries.
CACHE_LIMIT = 256

#: What a session's ``config`` may hold: the user's editable config or a frozen snapshot of one.
SessionConfig = Union["NpuConfig", ConfigSnapshot]
PlanFn = Callable[..., "Plan"]
Fetches = Union[Tuple[Hashable, ...], None]  # typing.Tuple: evaluated at import on Python 3.7


def snapshot_of(config: SessionConfig | None) -> ConfigSnapshot:
    """The snapshot a run uses: the config's current one (cached by the config itself), or the snapshot."""
    if config is None:
        return _EMPTY
    if isinstance(config, ConfigSnapshot):
        return config
    return config.snapshot()


_EMPTY = ConfigSnapshot()


class SessionPlans:
    """Plans and run settings of one session, cached per config snapshot."""

    def __init__(
        self,
        graph: Graph,
        get_config: Callable[[], SessionConfig | None],
        plan_fn: PlanFn | None,
        on_settings_change: Callable[[], None],
    ) -> None:
        self._graph = graph
        self._get_config = get_config
        self._plan_fn = plan_fn
        self._on_settings_change = on_settings_change
        self._settings_cache: tuple[str, RunSettings] | None = None
        self.plans: dict[tuple[object, ...], Plan] = {}

    def current(self) -> ConfigSnapshot:
        """The snapshot of the session's config as it is now."""
        return snapshot_of(self._get_config())

    def snapshot(self) -> str:
        """A string that changes exactly when an option that was set changes (the snapshot's key)."""
        return self.current().key

    def settings(self) -> RunSettings:
        """The run settings of the current config, re-read when the config changed."""
        current = self.current()
        if self._settings_cache is None or self._settings_cache[0] != current.key:
            self._settings_cache = (current.key, read_run_settings(current))
            self._on_settings_change()
        return self._settings_cache[1]

    def effective_config(self, reduced: bool) -> ConfigSnapshot:
        """The snapshot planned with: the session's, or its reduced-precision phase (accelerate_train_mode)."""
        current = self.current()
        if not reduced:
            return current
        if current.option("precision_mode_v2"):
            return current.layered({"precision_mode_v2": "mixed_float16"})
        return current.layered({"precision_mode": "allow_mix_precision"})

    def key(self, fetches: Fetches, reduced: bool) -> tuple[object, ...]:
        """Cache key of a plan: graph version, config, phase and fetches."""
        return (self._graph.version, self.snapshot(), reduced, fetches)

    def plan(self, fetches: Fetches, reduced: bool) -> Plan:
        """Plan for ``fetches`` (None = whole graph), cached per graph version, config and phase."""
        key = self.key(fetches, reduced)
        cached = self.plans.get(key)
        if cached is not None:
            return cached
        cfg = self.effective_config(reduced)
        plan_fn = self._plan_fn or _default_plan_fn()

        def compute() -> Plan:
            # the default planner reads only the run graph's ancestors (plan_input): the same plan, sooner
            graph = self._graph if self._plan_fn else planner_input(self._graph, fetches)
            return plan_fn(graph, cfg, fetches=list(fetches) if fetches else None)

        cache_dir = self.settings().plan_cache_dir
        if cache_dir:
            from npu_jupyter._runtime.session.plan_cache import cached_plan

            plan = cached_plan(cache_dir, self._graph, f"{key[1]}|reduced={reduced}", fetches, compute)
        else:
            plan = compute()
        if len(self.plans) >= CACHE_LIMIT:
            self.plans.clear()
        self.plans[key] = plan
        return plan


def _default_plan_fn() -> PlanFn:
    from npu_jupyter._plan.planner import plan

    return plan
