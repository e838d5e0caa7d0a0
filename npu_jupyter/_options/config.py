"""``NpuConfig``: every Ascend adapter session option as a validated traitlet.

The traits are generated from the catalogue (one per parameter_map key, ``None`` = unset so the
adapter's own default applies). Assignment validates the single option; ``validate()`` checks the
cross-option rules; building a proto validates first. TensorFlow is imported only by the proto and
code-generation helpers, never by this module.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Mapping, Union, cast

from traitlets import All, HasTraits, TraitType, observe

from npu_jupyter._options import catalogue, storage
from npu_jupyter._options.catalogue import OptionSpec
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._options.snapshot import ConfigSnapshot, Note, check_values

if TYPE_CHECKING:
    from npu_jupyter._options._option_types import OptionAttributes
    from npu_jupyter._tf_types import ConfigProto


class _AsImported:
    """A value to store exactly as the adapter would read it, bypassing the option check.

    Importing a real script's ConfigProto keeps values the adapter reads even when our check refuses
    them (the import notes say so); wrapping the value lets that go through traitlets' public
    ``set_trait`` — with its notifications — instead of writing the private trait storage.
    """

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


class OptionTrait(TraitType):  # type: ignore[type-arg]  # values are typed per option, see _option_types
    """A trait that checks values with its ``OptionSpec`` and raises NpuConfigError (a ValueError)."""

    allow_none = True

    def __init__(self, spec: OptionSpec) -> None:
        super().__init__(default_value=None, allow_none=True, help=spec.doc)
        self.spec = spec
        self.info_text = spec.allowed_text()
        self.metadata.update(key=spec.key, field=spec.field, group=spec.group)

    def validate(self, obj: object, value: object) -> object:
        """Check ``value`` against the option's catalogue entry; an imported value passes as the adapter wrote it."""
        if isinstance(value, _AsImported):
            return value.value
        return self.spec.check(value)


class _NpuConfigBase(HasTraits):
    """Behaviour of NpuConfig; the option traits are added by ``_build_class``."""

    # One lock for every config: the panel (widget callbacks) and a running %%npu cell may touch
    # the shared config from different threads, and a snapshot must never see half of an atomic
    # update (say precision_mode set but precision_mode_v2 not yet unset). Contention is negligible.
    _lock = threading.RLock()

    def __init__(self, values: Mapping[str, object] | _NpuConfigBase | None = None, **options: object) -> None:
        """Set ``values`` (a mapping or another config) and ``options`` atomically; unknown names raise."""
        super().__init__()
        if isinstance(values, _NpuConfigBase):
            values = values.changed()
        self._raw: set[str] = set()
        self._notes: list[Note] = []
        self._unasked: set[str] = set()  # imported keys NPUEstimator wrote on its own (no warnings)
        # Bumped on every change, so ``snapshot()`` rebuilds exactly when something changed.
        self._version = 0
        self._snapshot_cache: tuple[int, ConfigSnapshot] | None = None
        if values or options:
            self.update(values, **options)

    # ----------------------------------------------------------------------- attribute guard
    def __setattr__(self, name: str, value: object) -> None:
        """Unknown public names are refused (a misspelt option would otherwise be silently ignored)."""
        # HasTraits itself swaps some of its methods (notify_change) while holding notifications
        if name.startswith("_") or self.has_trait(name) or hasattr(HasTraits, name):
            super().__setattr__(name, value)
            return
        raise catalogue.unknown_option_error(name, value)

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        error = catalogue.unknown_option_error(name)
        raise AttributeError(str(error))

    @observe(All)
    def _forget_import_notes(self, change: Mapping[str, object]) -> None:
        """A value set by the user replaces an imported one, and with it the import's remarks."""
        name = change["name"]
        self._raw.discard(str(name))
        self._unasked.discard(str(name))
        self._notes = [(k, text) for k, text in self._notes if k != name]
        self._version += 1

    # ----------------------------------------------------------------------- setting values
    def _apply(self, values: Mapping[str, object]) -> None:
        """Assign already-checked values with one notification batch."""
        with self._lock, self.hold_trait_notifications():
            for key, value in values.items():
                setattr(self, key, value)

    def update(self, values: Mapping[str, object] | None = None, **options: object) -> _NpuConfigBase:
        """Set several options at once: all are checked first, then all applied, or none.

        ``None`` unsets an option. Returns the config, so calls chain.
        """
        merged = dict(values or {})
        merged.update(options)
        self._apply(check_values(merged))
        return self

    def set(self, key: str, value: object) -> _NpuConfigBase:
        """Set one option by its parameter_map key (``None`` unsets it)."""
        return self.update({key: value})

    def set_text(self, key: str, text: str) -> _NpuConfigBase:
        """Set one option from magic-line text, typed by its proto field."""
        return self.update({key: catalogue.parse_text(key, text)})

    def unset(self, *keys: str) -> _NpuConfigBase:
        """Unset options so the adapter's defaults apply again (unknown names raise, nothing changes)."""
        return self.update(dict.fromkeys(keys))

    def reset(self, values: Mapping[str, object] | None = None, **options: object) -> _NpuConfigBase:
        """Make the config hold exactly ``values`` (everything else unset), atomically."""
        merged = dict(values or {})
        merged.update(options)
        checked = check_values(merged)
        with self._lock:
            everything: dict[str, object] = dict.fromkeys(self.changed())
            everything.update(checked)
            self._apply(everything)
            self._notes.clear()
            self._version += 1
        return self

    # ----------------------------------------------------------------------- reading values
    def snapshot(self) -> ConfigSnapshot:
        """The options as they are now, frozen: what a session, a plan or a cell runs with.

        Cached until the config changes, so taking one per ``sess.run`` costs a comparison; its
        cross-option problems are computed once per snapshot.
        """
        with self._lock:
            cached = self._snapshot_cache
            if cached is not None and cached[0] == self._version:
                return cached[1]
            version = self._version
            values = self.trait_values()
            snap = ConfigSnapshot(
                {key: values.get(key) for key in catalogue.keys()},
                raw=self._raw,
                notes=tuple(self._notes),
                unasked=self._unasked,
            )
            self._snapshot_cache = (version, snap)
            return snap

    def changed(self) -> dict[str, object]:
        """The set options only, in catalogue.keys() order.

        An explicit ``use_off_line=True`` is listed: the user set it. Equality alone counts it as
        unset, because the built proto is the same either way (see ``__eq__``).
        """
        return self.snapshot().changed()

    def effective(self, key: str) -> object:
        """The set value, or what the adapter uses when the key is absent (``None``: GE decides)."""
        return self.snapshot().effective(key)

    @classmethod
    def defaults(cls) -> dict[str, object]:
        """The adapter's value for every option when the key is absent (for display)."""
        return {spec.key: spec.default for spec in catalogue.specs()}

    @classmethod
    def spec(cls, key: str) -> OptionSpec:
        """The catalogue entry of ``key``."""
        return catalogue.spec(key)

    def validate(self) -> None:
        """Raise one NpuConfigError listing every bad imported value and broken cross-option rule."""
        self.snapshot().validate()

    def problems(self) -> list[str]:
        """What ``validate()`` would complain about, as a list (empty when valid)."""
        return self.snapshot().problems()

    def import_warnings(self) -> list[str]:
        """Only the remarks of the import (keys the adapter ignores, wrong fields, bad values kept)."""
        return self.snapshot().import_warnings()

    def warnings(self) -> list[str]:
        """Softer findings: import remarks (ignored keys, wrong fields) and suspicious combinations."""
        return self.snapshot().warnings()

    # ----------------------------------------------------------------------- copies and equality
    @classmethod
    def from_snapshot(cls, snapshot: ConfigSnapshot) -> _NpuConfigBase:
        """A config holding ``snapshot`` (import remarks and kept values included), not checked again.

        The public constructor of the importers: they read a ConfigProto or NPURunConfig arguments
        into a snapshot and this turns it into an editable config. Its first ``snapshot()`` is the
        very same object, so nothing is validated twice.
        """
        config = cls()
        # Not inside hold_trait_notifications: on leaving it traitlets re-validates each value, which
        # would refuse the imported ones the adapter reads but our check does not accept.
        for key, value in snapshot.values.items():
            config.set_trait(key, _AsImported(value))
        with config._lock:  # after the notifications, which forget import notes
            config._raw, config._notes = set(snapshot.raw), list(snapshot.notes)
            config._unasked = set(snapshot.unasked)
            config._snapshot_cache = (config._version, snapshot)
        return config

    def copy(self, **overrides: object) -> _NpuConfigBase:
        """An independent copy (import remarks included) with ``overrides`` applied atomically."""
        checked = check_values(overrides)
        clone = type(self).from_snapshot(self.snapshot())
        clone._apply(checked)
        return clone

    def __eq__(self, other: object) -> bool:
        """Equal when they build the same proto: the set options match, counting an explicit
        ``use_off_line=True`` as unset, because ``to_config_proto`` writes exactly that when it is
        unset (the proto cannot tell the two apart, so neither does equality).
        """
        if not isinstance(other, _NpuConfigBase):
            return NotImplemented
        return self.snapshot() == other.snapshot()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.changed().items())
        return f"NpuConfig({body})"

    # ----------------------------------------------------------------------- files
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the set options to ``path`` as JSON, atomically."""
        storage.dump_options(path, self.changed())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> _NpuConfigBase:
        """A new config from a file written by ``save`` (or a plain JSON object of options).

        Every option is checked before any is set, so a bad file yields one clear error and no config.
        """
        options = storage.read_options(path)
        try:
            return cls(options)
        except NpuConfigError as exc:
            raise NpuConfigError(
                f"NPU config file {str(path)!r}: {exc}", problems=exc.problems, option=exc.option
            ) from None

    # ----------------------------------------------------------------------- proto and code
    def to_config_proto(self, base: ConfigProto | None = None, *, validate: bool = True) -> ConfigProto:
        """A ``tf.compat.v1.ConfigProto`` with the NpuOptimizer custom optimizer (see options.proto)."""
        return self.snapshot().to_config_proto(base, validate=validate)

    @classmethod
    def from_config_proto(cls, proto: ConfigProto | bytes, *, strict: bool = False) -> _NpuConfigBase:
        """The config the adapter would read from ``proto`` (see options.proto)."""
        from npu_jupyter._options.proto import read_config_proto

        return cls.from_snapshot(read_config_proto(proto, strict=strict))

    @classmethod
    def from_run_config_kwargs(
        cls, kwargs: Mapping[str, object], *, strict: bool = False, estimator_defaults: bool = False
    ) -> _NpuConfigBase:
        """The config NPURunConfig(**kwargs) would write (see options.codegen)."""
        from npu_jupyter._options.codegen import read_run_config_kwargs

        return cls.from_snapshot(read_run_config_kwargs(kwargs, strict=strict, estimator_defaults=estimator_defaults))

    @classmethod
    def from_tf2_options(cls, options: object) -> _NpuConfigBase:
        """The config an ``npu_device.global_options()`` object holds (see options.tf2)."""
        from npu_jupyter._options.tf2 import read_tf2_options

        return cls(read_tf2_options(options))

    def to_run_config_kwargs(self) -> dict[str, object]:
        """Keyword arguments for NPURunConfig, sub-configs as nested dicts (see options.codegen)."""
        from npu_jupyter._options.codegen import to_run_config_kwargs

        return to_run_config_kwargs(self.snapshot())

    def to_code(self, api: str = "session") -> str:
        """A runnable Python snippet building this config for ``api`` "session", "estimator" or "tf2"."""
        from npu_jupyter._options.codegen import to_code

        return to_code(self.snapshot(), api=api)


ConfigSource = Union[ConfigSnapshot, _NpuConfigBase, Mapping[str, object], None]


def as_snapshot(config: ConfigSource) -> ConfigSnapshot:
    """The snapshot an entry point (``session()``, ``plan()``, a cell) runs with, taken once.

    An ``NpuConfig`` gives its current snapshot, a mapping is checked value by value (an unknown key or
    a bad value raises NpuConfigError, as building an NpuConfig would), ``None`` means no option set.
    """
    if isinstance(config, ConfigSnapshot):
        return config
    if config is None:
        return ConfigSnapshot()
    if isinstance(config, _NpuConfigBase):
        return config.snapshot()
    if isinstance(config, Mapping):
        return ConfigSnapshot.checked(config)
    raise TypeError(f"expected an NpuConfig, a ConfigSnapshot, a dict of options or None, not {type(config).__name__}")


def _build_class() -> type[_NpuConfigBase]:
    """NpuConfig with one OptionTrait per catalogue entry."""
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__qualname__": "NpuConfig",
        "__doc__": _class_doc(),
    }
    for spec in catalogue.specs():
        namespace[spec.key] = OptionTrait(spec)
    metaclass: Any = type(_NpuConfigBase)  # traitlets' MetaHasTraits sets the traits up
    return cast("type[_NpuConfigBase]", metaclass("NpuConfig", (_NpuConfigBase,), namespace))


def _class_doc() -> str:
    return (
        "Every Ascend adapter session option as a validated trait, named by its parameter_map key.\n\n"
        "``None`` = unset (the adapter default applies, see ``NpuConfig.defaults()``). Assigning a bad "
        "value or an unknown name raises ``NpuConfigError`` and leaves the config unchanged.\n\n"
        "Examples\n--------\n"
        ">>> cfg = NpuConfig(precision_mode='allow_mix_precision', mix_compile_mode=True)\n"
        ">>> cfg.update(enable_dump=True, dump_path='/tmp/dump')\n"
        ">>> proto = cfg.to_config_proto()\n"
    )


if TYPE_CHECKING:  # editors and mypy see every option as a typed attribute (generated view)

    class NpuConfig(_NpuConfigBase, OptionAttributes):
        """Every Ascend adapter session option as a validated trait, named by its parameter_map key."""

else:
    NpuConfig = _build_class()
