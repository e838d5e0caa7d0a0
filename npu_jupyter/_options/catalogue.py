"""The option catalogue: ``catalogue.json`` read once into ``OptionSpec`` objects.

Everything that knows about an option — traits, validation, proto field types, the panel's controls,
the magic's help, generated code — asks this module, so adding an option is one JSON entry.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Union

from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._options.grammars import CHECKERS

#: A checked option value, typed by its proto field (.b, .i, .s).
OptionValue = Union[bool, int, str]

FIELD_TYPES = {"b": bool, "i": int, "s": str}
_TRUE_WORDS = {"true", "1", "yes", "on"}
_FALSE_WORDS = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class OptionSpec:
    """One session option: its parameter_map key, proto field and what the adapter accepts."""

    key: str
    field: str
    default: Any
    group: str
    doc: str
    api: tuple[str, ...]
    run_config: str | None
    choices: tuple[Any, ...] | None = None
    range: tuple[int | None, int | None] | None = None
    validator: str | None = None
    seed_note: str | None = None
    adapter_note: str | None = None
    ignored: bool = False
    deprecated: bool = False
    deprecated_by: str | None = None
    accepts_int: bool = False
    estimator_writes: tuple[Any, str | None] | None = None  # (value, argument that must be given, or None)
    choice_notes: Mapping[str, str] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )  # value -> what it does
    tf2: Mapping[str, Any] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )  # npu_device path, choices
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @property
    def python_type(self) -> type:
        """bool, int or str, from the proto field."""
        return FIELD_TYPES[self.field]

    def allowed_text(self) -> str:
        """What values are allowed, in words, for error messages and help."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.range is not None:
            low, high = self.range
            what = "a byte count" if self.field == "s" else "an int"
            if high is None:
                return f"{what} >= {low}"
            return f"{what} in [{low}, {high}]"
        if self.field == "s" and self.accepts_int:
            return "a whole number of bytes (int or decimal string)"
        return {"b": "True or False", "i": "an int", "s": "a string"}[self.field]

    def check(self, value: object) -> OptionValue:
        """The value converted to the option's Python type, or NpuConfigError naming what is allowed.

        Why strict about bool vs int: a bool given for an int option (or the reverse) is almost always a
        slip, and the proto would silently turn it into 1/0.
        """
        converted = self.convert(value)
        if self.choices is not None and converted not in self.choices:
            raise self._error(
                value,
                f"is not allowed; choose {self.allowed_text()}",
                suggestions=_close([str(c) for c in self.choices], str(converted)),
            )
        if self.validator:
            problem = CHECKERS[self.validator](str(converted))  # validators are for .s options
            if problem:
                raise self._error(value, f"is malformed: {problem}")
        if self.range is not None:
            low, high = self.range
            number = int(converted)  # byte-count strings were checked to be digits above
            if (low is not None and number < low) or (high is not None and number > high):
                raise self._error(value, f"is out of range; expected {self.allowed_text()}")
        return converted

    def convert(self, value: object) -> OptionValue:
        """Type conversion by proto field only (bytes decode for .s; ints for string byte counts)."""
        if self.field == "b":
            if isinstance(value, bool):
                return value
            raise self._error(value, "has the wrong type; expected True or False")
        if self.field == "i":
            if isinstance(value, int) and not isinstance(value, bool):
                if not -(2**63) <= value < 2**63:
                    raise self._error(value, "does not fit the proto's int64 field")
                return int(value)
            raise self._error(value, f"has the wrong type; expected {self.allowed_text()}")
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise self._error(value, "is not UTF-8 text") from None
        if self.accepts_int and isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise self._error(value, "is negative; expected a byte count >= 0")
            return str(value)
        if isinstance(value, str):
            try:
                value.encode("utf-8")  # the proto's string field is UTF-8: a lone surrogate cannot be written
            except UnicodeEncodeError:
                raise self._error(
                    value, "is not valid text (it holds a lone surrogate, which UTF-8 cannot encode)"
                ) from None
            return value
        raise self._error(value, f"has the wrong type; expected {self.allowed_text()}")

    def _error(self, value: object, what: str, suggestions: list[str] | None = None) -> NpuConfigError:
        """An error naming this option, the value and what is allowed."""
        hint = f" (did you mean {suggestions[0]!r}?)" if suggestions else ""
        message = f"{self.key}: {value!r} {what}{hint}"
        return NpuConfigError(
            message, option=self.key, value=value, allowed=self.allowed_text(), suggestions=suggestions or ()
        )

    def parse_text(self, text: str) -> OptionValue:
        """Type a string from a magic line by the proto field, then check it.

        b: true/false/1/0/yes/no/on/off (any case); i: decimal int; s: verbatim (surrounding quotes
        removed, so ``dump_step="0|5"`` works in a magic line).
        """
        raw = text.strip()
        if self.field == "b":
            word = raw.lower()
            if word in _TRUE_WORDS:
                return self.check(True)
            if word in _FALSE_WORDS:
                return self.check(False)
            raise self._error(text, "is not a bool; write true/false, 1/0 or yes/no")
        if self.field == "i":
            try:
                number = int(raw, 10)
            except ValueError:
                raise self._error(text, f"is not an int; expected {self.allowed_text()}") from None
            return self.check(number)
        raw = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else text
        return self.check(raw)


def _close(candidates: list[str], word: str, n: int = 3) -> list[str]:
    """Close matches first by spelling, then case-insensitively."""
    found = difflib.get_close_matches(word, candidates, n=n, cutoff=0.6)
    if not found:
        lowered = {c.lower(): c for c in candidates}
        found = [lowered[c] for c in difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.6)]
    return found


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    """catalogue.json, read once."""
    data: dict[str, Any] = json.loads(Path(__file__).with_name("catalogue.json").read_text(encoding="utf-8"))
    return data


def _spec_from_entry(entry: Mapping[str, Any]) -> OptionSpec:
    """One JSON entry -> OptionSpec (lists become tuples so specs stay hashable)."""
    known = set(OptionSpec.__dataclass_fields__) - {"extra"}
    kwargs = {k: v for k, v in entry.items() if k in known}
    kwargs["api"] = tuple(kwargs["api"])
    if kwargs.get("choices") is not None:
        kwargs["choices"] = tuple(kwargs["choices"])
    if kwargs.get("range") is not None:
        kwargs["range"] = tuple(kwargs["range"])
    if kwargs.get("estimator_writes") is not None:
        kwargs["estimator_writes"] = (kwargs["estimator_writes"]["value"], kwargs["estimator_writes"]["when"])
    return OptionSpec(**kwargs, extra={k: v for k, v in entry.items() if k not in known})


@lru_cache(maxsize=1)
def _specs() -> dict[str, OptionSpec]:
    return {entry["key"]: _spec_from_entry(entry) for entry in _data()["options"]}


def specs() -> list[OptionSpec]:
    """Every option, in catalogue order (grouped as the panel shows them)."""
    return list(_specs().values())


def keys() -> list[str]:
    """Every parameter_map key."""
    return list(_specs())


def groups() -> list[str]:
    """Group names in display order."""
    return list(_data()["groups"])


def specs_in_group(group: str) -> list[OptionSpec]:
    """The options of one group, in catalogue order."""
    if group not in groups():
        raise NpuConfigError(
            f"unknown option group {group!r}; groups: {', '.join(groups())}",
            value=group,
            allowed=groups(),
            suggestions=_close(groups(), group),
        )
    return [s for s in specs() if s.group == group]


def foreign_keys() -> dict[str, dict[str, Any]]:
    """Keys real scripts set that the adapter never reads: misspellings and keys that belong elsewhere."""
    return {entry["key"]: entry for entry in _data()["foreign_keys"]}


def run_config_only_kwargs() -> list[str]:
    """NPURunConfig keyword arguments that are not session options (model_dir, session_config, ...)."""
    return list(_data()["run_config_only_kwargs"])


def profiling_option_keys() -> dict[str, dict[str, Any]]:
    """The fields of the profiling_options JSON and what each accepts."""
    return dict(_data()["profiling_option_keys"])


def suggest(name: str, n: int = 3) -> list[str]:
    """Known option keys close to ``name`` (foreign-key table first, then difflib)."""
    foreign = foreign_keys().get(name)
    if foreign and foreign.get("meant"):
        return [foreign["meant"]]
    return _close(keys(), name, n=n)


def unknown_option_error(name: str, value: object = None) -> NpuConfigError:
    """The error for a name that is not an option, with close known names."""
    close = suggest(name)
    foreign = foreign_keys().get(name)
    if foreign:
        message = f"{name!r} is not an NPU session option: {foreign['why']}"
    else:
        message = f"{name!r} is not an NPU session option"
    if close:
        message += f" (did you mean {', '.join(repr(c) for c in close)}?)"
    else:
        message += "; see npu_jupyter._options.catalogue.keys() for the known options"
    return NpuConfigError(message, option=name, value=value, suggestions=close)


def spec(key: str) -> OptionSpec:
    """The spec of ``key``, or NpuConfigError with close matches."""
    found = _specs().get(key)
    if found is None:
        raise unknown_option_error(key)
    return found


def parse_text(key: str, text: str) -> OptionValue:
    """Type a magic-line string for option ``key`` (see ``OptionSpec.parse_text``)."""
    return spec(key).parse_text(text)


def by_run_config_path() -> dict[str, OptionSpec]:
    """NPURunConfig keyword path ('dump_config.dump_path') -> spec."""
    return {s.run_config: s for s in specs() if s.run_config}


def default_of(key: str) -> object:
    """What the adapter uses when ``key`` is absent (``None``: GE decides); the one source of defaults."""
    return spec(key).default


def precision_strategies(key: str) -> dict[str, str]:
    """Value of ``precision_mode`` or ``precision_mode_v2`` -> the fusion engine's strategy (MIX_FP16, ...)."""
    return dict(spec(key).extra["strategies"])


def mixed_precision_values(key: str) -> tuple[str, ...]:
    """The values of ``precision_mode`` / ``precision_mode_v2`` that select a mixed-precision strategy."""
    return tuple(value for value, strategy in precision_strategies(key).items() if strategy.startswith("MIX"))


def profiling_default() -> dict[str, str]:
    """The profiling_options JSON the adapter uses when profiling is on and the option is empty."""
    return dict(_data()["profiling_default"])
