"""``ConfigSnapshot``: the options a session, a plan or a cell runs with, frozen when it starts.

``NpuConfig`` is the user's editable object (the panel and ``%npu set`` change it at any time); the
pipeline must not see it change halfway, nor re-check it at every hand-over. So the entry points
(``session()``, ``plan()``, a ``%%npu`` cell) take one snapshot and pass that on: its cross-option
problems are computed once and kept, its values cannot change, and it answers the read side of
``NpuConfig`` (``changed()``, ``option()``, ``validate()``, attribute reads, the ConfigProto). The
importers (ConfigProto, NPURunConfig arguments) return one too, remarks included, so nothing outside
``NpuConfig`` writes its private state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, AbstractSet, Iterable, Mapping, Optional, Sequence, Tuple

from npu_jupyter._options import catalogue, rules
from npu_jupyter._options.errors import NpuConfigError

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._tf_types import ConfigProto

#: An import remark: (the option it is about or None, the sentence).
Note = Tuple[Optional[str], str]  # typing's spelling: evaluated at import on Python 3.7


def _frozen(values: Mapping[str, object]) -> Mapping[str, object]:
    """The set values in catalogue order (``None`` = unset, dropped), read-only."""
    return MappingProxyType({key: values[key] for key in catalogue.keys() if values.get(key) is not None})


@dataclass(frozen=True, eq=False)
class ConfigSnapshot:
    """The set options (as the adapter reads them) and the import remarks that came with them.

    ``raw`` names imported values that fail our check but are kept because the adapter reads them;
    ``unasked`` names keys a tool (NPUEstimator) wrote on its own, about which warnings stay silent.
    Built by :meth:`checked` (values checked one by one), ``NpuConfig.snapshot()`` or an importer.
    """

    values: Mapping[str, object] = field(default_factory=dict)
    raw: AbstractSet[str] = frozenset()
    notes: Sequence[Note] = ()
    unasked: AbstractSet[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _frozen(self.values))
        object.__setattr__(self, "raw", frozenset(self.raw))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "unasked", frozenset(self.unasked))

    @classmethod
    def checked(cls, values: Mapping[str, object]) -> ConfigSnapshot:
        """A snapshot of ``values``, each checked by the catalogue; one NpuConfigError lists every bad one."""
        return cls(check_values(values))

    # ----------------------------------------------------------------------- reading values
    def option(self, key: str, default: object = None) -> object:
        """The set value of ``key``, or ``default`` when it is unset (the one reader of an option)."""
        value = self.values.get(key)
        return default if value is None else value

    def __getattr__(self, name: str) -> object:
        """``snapshot.precision_mode`` reads like ``NpuConfig`` (``None`` when unset); other names raise."""
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self.values and name not in catalogue.keys():
            # an unknown name is an AttributeError with close matches, as on NpuConfig
            raise AttributeError(str(catalogue.unknown_option_error(name)))
        return self.values.get(name)

    def changed(self) -> dict[str, object]:
        """The set options, in catalogue order (a new dict)."""
        return dict(self.values)

    def effective(self, key: str) -> object:
        """The set value, or what the adapter uses when the key is absent (``None``: GE decides)."""
        return self.option(key, catalogue.spec(key).default)

    @property
    def key(self) -> str:
        """A string equal for two snapshots exactly when their set options are (cache keys)."""
        cached = self.__dict__.get("_key")
        if cached is None:  # computed once; functools.cached_property needs Python 3.8
            cached = json.dumps(dict(self.values), sort_keys=True, default=str)
            object.__setattr__(self, "_key", cached)
        return str(cached)

    # ----------------------------------------------------------------------- checking
    @property
    def _problems(self) -> tuple[str, ...]:
        """Every bad imported value and broken cross-option rule, computed once per snapshot."""
        cached = self.__dict__.get("_problems_cache")
        if cached is not None:
            return tuple(cached)
        problems: list[str] = []
        for key in sorted(self.raw):
            try:
                catalogue.spec(key).check(self.values.get(key))
            except NpuConfigError as exc:
                problems.append(str(exc))
        problems.extend(rules.errors(self.values))
        object.__setattr__(self, "_problems_cache", tuple(problems))
        return tuple(problems)

    def problems(self) -> list[str]:
        """What :meth:`validate` would complain about (empty when valid)."""
        return list(self._problems)

    def validate(self) -> None:
        """Raise one NpuConfigError listing every bad imported value and broken cross-option rule."""
        problems = self.problems()
        if not problems:
            return
        if len(problems) == 1:
            raise NpuConfigError(problems[0], problems=problems)
        text = f"{len(problems)} problems in the NPU config:\n" + "\n".join(f"  - {p}" for p in problems)
        raise NpuConfigError(text, problems=problems)

    def import_warnings(self) -> list[str]:
        """Only the remarks of the import (keys the adapter ignores, wrong fields, bad values kept)."""
        return [text for _, text in self.notes]

    def warnings(self) -> list[str]:
        """Import remarks and suspicious combinations (see ``rules.warnings``)."""
        return self.import_warnings() + rules.warnings(self.values, unasked=self.unasked)

    # ----------------------------------------------------------------------- new snapshots
    def layered(self, *layers: Mapping[str, object]) -> ConfigSnapshot:
        """A copy of this snapshot with ``layers`` applied lowest first (``None`` unsets); every value is checked.

        A value that changes drops the key's import remark, as assigning it on ``NpuConfig`` does.
        """
        values = dict(self.values)
        for layer in layers:
            values.update(check_values(layer))
        moved = {key for key in set(values) | set(self.values) if values.get(key) != self.values.get(key)}
        if not moved:
            return self
        return ConfigSnapshot(
            values,
            raw=self.raw - moved,
            notes=tuple(note for note in self.notes if note[0] not in moved),
            unasked=self.unasked - moved,
        )

    def to_config_proto(self, base: ConfigProto | None = None, *, validate: bool = True) -> ConfigProto:
        """A ``tf.compat.v1.ConfigProto`` carrying these options (see ``options.proto``)."""
        from npu_jupyter._options.proto import to_config_proto

        if validate:
            self.validate()
        return to_config_proto(self.values, base)

    # ----------------------------------------------------------------------- equality
    def __eq__(self, other: object) -> bool:
        """Equal when they build the same proto (an explicit ``use_off_line=True`` counts as unset)."""
        if not isinstance(other, ConfigSnapshot):
            return NotImplemented
        return canonical(self.values) == canonical(other.values)

    def __hash__(self) -> int:
        return hash(json.dumps(canonical(self.values), sort_keys=True, default=str))

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        return f"ConfigSnapshot({body})"


def check_values(values: Mapping[str, object]) -> dict[str, object]:
    """Every value converted and checked (``None`` kept: unset), or one NpuConfigError listing every bad entry."""
    problems: list[NpuConfigError] = []
    result: dict[str, object] = {}
    for key, value in values.items():
        try:
            spec = catalogue.spec(key)
            result[key] = None if value is None else spec.check(value)
        except NpuConfigError as exc:
            problems.append(exc)
    if problems:
        raise NpuConfigError.combine(problems)
    return result


def canonical(options: Mapping[str, object]) -> dict[str, object]:
    """Set options with those dropped that the proto writes the same way when they are unset."""
    return {k: v for k, v in options.items() if not (k == "use_off_line" and v is True)}


def joined_problems(problems: Iterable[str], what: str) -> str:
    """One problem as it is, several as "N problems <what>:" and one line each (the importers' errors)."""
    found = list(problems)
    if len(found) == 1:
        return found[0]
    return f"{len(found)} problems {what}:\n" + "\n".join(f"  - {p}" for p in found)
