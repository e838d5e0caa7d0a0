"""The plans an emulator session runs with: one per graph version, config snapshot, phase and run.

The session's ``config`` may change between runs (the panel, ``%%npu`` overrides): a snapshot string
of the options that were set changes exactly when one does (traitlets observers mark it dirty), and
plans and run settings are cached against it. ``accelerate_train_mode`` plans its reduced-precision
phase with its own config. A ``graph_compiler_cache_dir`` keeps plans on disk across sessions.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from npu_jupyter.runtime.run_settings import RunSettings, option, read_run_settings

# Plans per fetch set are dropped whole past this many entries.
CACHE_LIMIT = 256


class SessionPlans:
    """Plans and run settings of one session, cached per config snapshot."""

    def __init__(
        self,
        graph: Any,
        get_config: Callable[[], Any],
        plan_fn: Callable[..., Any] | None,
        on_settings_change: Callable[[], None],
    ) -> None:
        self._graph = graph
        self._get_config = get_config
        self._plan_fn = plan_fn
        self._on_settings_change = on_settings_change
        self._config_snapshot_cache: tuple[Any, str] | None = None
        self._settings_cache: tuple[str, RunSettings] | None = None
        self.plans: dict[tuple[Any, ...], Any] = {}

    def snapshot(self) -> str:
        """A string that changes exactly when an option that was set changes."""
        cfg = self._get_config()
        cached = self._config_snapshot_cache
        if cached is not None and cached[0] is cfg and getattr(cfg, "_npu_emu_clean", False):
            return cached[1]
        if cfg is None:
            snapshot = "{}"
        elif hasattr(cfg, "changed"):
            snapshot = json.dumps(cfg.changed(), sort_keys=True, default=str)
        else:
            snapshot = json.dumps(dict(cfg), sort_keys=True, default=str)
        if hasattr(cfg, "observe") and not getattr(cfg, "_npu_emu_observed", False):
            cfg.observe(_mark_dirty)
            cfg._npu_emu_observed = True
        if hasattr(cfg, "observe"):
            cfg._npu_emu_clean = True
        self._config_snapshot_cache = (cfg, snapshot)
        return snapshot

    def settings(self) -> RunSettings:
        """The run settings of the current config, re-read when the config changed."""
        snapshot = self.snapshot()
        if self._settings_cache is None or self._settings_cache[0] != snapshot:
            self._settings_cache = (snapshot, read_run_settings(self._get_config()))
            self._on_settings_change()
        return self._settings_cache[1]

    def effective_config(self, reduced: bool) -> Any:
        """The config planned with: the session's, or its reduced-precision phase (accelerate_train_mode)."""
        cfg = self._get_config()
        if not reduced:
            return cfg
        if option(cfg, "precision_mode_v2"):
            overrides = {"precision_mode_v2": "mixed_float16"}
        else:
            overrides = {"precision_mode": "allow_mix_precision"}
        if hasattr(cfg, "copy"):
            return cfg.copy(**overrides)
        return {**(cfg or {}), **overrides}

    def key(self, fetches: tuple[Any, ...] | None, reduced: bool) -> tuple[Any, ...]:
        """Cache key of a plan: graph version, config, phase and fetches."""
        return (self._graph.version, self.snapshot(), reduced, fetches)

    def plan(self, fetches: tuple[Any, ...] | None, reduced: bool) -> Any:
        """Plan for ``fetches`` (None = whole graph), cached per graph version, config and phase."""
        key = self.key(fetches, reduced)
        cached = self.plans.get(key)
        if cached is not None:
            return cached
        cfg = self.effective_config(reduced)
        plan_fn = self._plan_fn or _default_plan_fn()
        cache_dir = self.settings().plan_cache_dir
        if cache_dir:
            from npu_jupyter.runtime.plan_cache import cached_plan

            plan = cached_plan(
                cache_dir,
                self._graph,
                key[1] + f"|reduced={reduced}",
                fetches,
                lambda: plan_fn(self._graph, cfg, fetches=list(fetches) if fetches else None),
            )
        else:
            plan = plan_fn(self._graph, cfg, fetches=list(fetches) if fetches else None)
        if len(self.plans) >= CACHE_LIMIT:
            self.plans.clear()
        self.plans[key] = plan
        return plan


def _mark_dirty(change: Any) -> None:
    """Traitlets observer: an option changed, so the session's config snapshot must be recomputed."""
    change["owner"]._npu_emu_clean = False


def _default_plan_fn() -> Callable[..., Any]:
    from npu_jupyter.plan.planner import plan

    return plan
