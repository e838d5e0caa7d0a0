"""The TF2 adapter's options object, ``npu_device.global_options()``, emulated from the catalogue.

A TF2 script sets attributes on ``npu_device.global_options()`` (``precision_mode`` at the top,
``dump_config.enable_dump`` in a sub-config) before ``npu_device.open().as_default()``. The adapter
checks each value when it is set: outside an option's list of allowed values it raises ``TypeError``
(when the type differs from the default's) or ``ValueError``; an attribute the config has not is a
``ValueError`` naming every option. These objects behave the same, so a script that the adapter refuses
fails here with the adapter's error.

Where each fact lives: the options that match a TF1 session option take their default and allowed
values from that option's ``tf2`` entry in the option catalogue; ``tf2_options.json`` holds the tree
(attribute order, sub-config classes) and the few options only the TF2 adapter has.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, cast

from npu_jupyter._options import catalogue

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._options.config import NpuConfig


class OptionValue:
    """One option: its default, the values it allows (None: any) and the value set."""

    def __init__(self, default: object, optional: list[object] | None, deprecated_by: str | None = None) -> None:
        self._default, self._optional, self._value = default, optional, default
        self.deprecated_by = deprecated_by  # None: not deprecated; "": deprecated without replacement

    @property
    def default(self) -> object:
        """The adapter's default for this option."""
        return self._default

    @property
    def optional(self) -> list[object] | None:
        """The values the adapter allows (None: any value)."""
        return self._optional

    @property
    def value(self) -> str | None:
        """The text the adapter passes on: None when unset, True/False as "1"/"0"."""
        if self._value is None:
            return None
        if str(self._value) == "True":
            return "1"
        if str(self._value) == "False":
            return "0"
        return str(self._value)

    @value.setter
    def value(self, new: object) -> None:
        if isinstance(self._optional, list) and new not in self._optional:
            if self._default is not None and not isinstance(new, type(self._default)):
                raise TypeError(f"Expected {type(self._default).__name__}, got {type(new).__name__}")
            raise ValueError(f"'{new}' not in optional list {self._optional}")
        self._value = new


class NpuBaseConfig:
    """A config node: setting an option checks it; an unknown attribute is the adapter's ValueError."""

    _class_name: str
    _fixed_attrs: list[str]

    def __init__(self, class_name: str, children: dict[str, OptionValue | NpuBaseConfig]) -> None:
        object.__setattr__(self, "_class_name", class_name)
        object.__setattr__(self, "_fixed_attrs", list(children))
        for name, child in children.items():
            object.__setattr__(self, name, child)

    def __setattr__(self, key: str, value: object) -> None:
        if key not in self._fixed_attrs:
            raise ValueError(f"{self._class_name} has no option {key}, all options {self._fixed_attrs}")
        current = getattr(self, key)
        if isinstance(current, OptionValue):
            current.value = value
        else:
            object.__setattr__(self, key, value)

    def as_dict(self) -> dict[str, str]:
        """Every option set (or with a default) as the text the adapter hands the device, as it does."""
        options: dict[str, str] = {}
        for name in self._fixed_attrs:
            child = getattr(self, name)
            if isinstance(child, OptionValue) and child.value is not None:
                if child.deprecated_by is not None:
                    instead = f"Please use '{child.deprecated_by}' instead." if child.deprecated_by else ""
                    print(  # noqa: T201 - the adapter prints this warning itself
                        f"[warning][tf_adapter] Option '{name}' is deprecated and will be removed in future "
                        f"version. {instead or 'Please do not configure this option in the future.'}"
                    )
                options[name] = child.value
            elif isinstance(child, NpuBaseConfig):
                options.update(child.as_dict())
        return options

    def __repr__(self) -> str:
        return f"<emulated npu_device {self._class_name}: {self.as_dict()}>"


@lru_cache(maxsize=1)
def tree_data() -> dict[str, Any]:
    """``tf2_options.json``: the adapter's option tree and its TF2-only options."""
    with open(Path(__file__).with_name("tf2_options.json"), encoding="utf-8") as handle:
        return cast("dict[str, Any]", json.load(handle))


def option_facts() -> dict[str, dict[str, Any]]:
    """Path -> {"default", "optional", "deprecated_by"} for every option of the adapter's tree, in order."""
    from_catalogue: dict[str, dict[str, Any]] = {}
    for spec in catalogue.specs():
        if spec.tf2 is not None:
            from_catalogue[str(spec.tf2["path"])] = _catalogued_facts(spec)
    only = tree_data()["tf2_only"]
    return {path: from_catalogue.get(path) or only[path] for path in tree_data()["order"]}


def _catalogued_facts(spec: catalogue.OptionSpec) -> dict[str, Any]:
    """The TF2 adapter's default and allowed values of a catalogued option (its tf2 entry over its own)."""
    assert spec.tf2 is not None  # noqa: S101 - callers pass TF2 options only
    tf2 = spec.tf2
    default = tf2.get("default", None if spec.default == "" else spec.default)
    if "choices" in tf2:
        optional = tf2["choices"]
    elif spec.choices is not None:
        optional = list(spec.choices)
    else:
        optional = [True, False] if spec.field == "b" else None
    optional = None if optional is None else list(optional)
    return {"default": default, "optional": optional, "deprecated_by": tf2.get("deprecated_by")}


def _build(prefix: str, facts: dict[str, dict[str, Any]]) -> NpuBaseConfig:
    """The config node at ``prefix`` ('' = the root) with its options and sub-configs in adapter order."""
    classes = tree_data()["configs"]
    children: dict[str, OptionValue | NpuBaseConfig] = {}
    start = f"{prefix}." if prefix else ""
    for path, fact in facts.items():
        if not path.startswith(start):
            continue
        head = path[len(start) :].split(".", 1)[0]
        if head in children:
            continue
        child = f"{start}{head}"
        if child in classes:
            children[head] = _build(child, facts)
        else:
            children[head] = OptionValue(fact["default"], fact["optional"], fact.get("deprecated_by"))
    return NpuBaseConfig(classes[prefix], children)


def new_global_options() -> NpuBaseConfig:
    """A fresh ``NpuConfig`` as ``npu_device.global_options()`` first returns it."""
    return _build("", option_facts())


def new_run_context_options() -> NpuBaseConfig:
    """A fresh ``npu_device.configs.run_context_options()``: the ``experimental`` sub-tree only."""
    experimental = _build("experimental", option_facts())
    return NpuBaseConfig("NpuRunContextOptions", {"experimental": experimental})


def leaves(node: NpuBaseConfig, prefix: str = "") -> Iterator[tuple[str, OptionValue]]:
    """(dotted path, OptionValue) of every option under ``node``, in the adapter's order."""
    for name in node._fixed_attrs:
        child = getattr(node, name)
        path = f"{prefix}{name}"
        if isinstance(child, NpuBaseConfig):
            yield from leaves(child, f"{path}.")
        else:
            yield path, child


def to_config(options: NpuBaseConfig) -> NpuConfig:
    """The NpuConfig these options hold (options only the TF2 adapter has are not read: see ``unread``)."""
    from npu_jupyter._options.config import NpuConfig

    return cast("NpuConfig", NpuConfig.from_tf2_options(options))


def unread(options: NpuBaseConfig) -> list[str]:
    """Options set away from their default that no emulated decision reads (TF2-only options)."""
    only = tree_data()["tf2_only"]
    return [
        path
        for path, option in leaves(options)
        if path in only and option.value is not None and option.value != _text(option.default)
    ]


def _text(value: object) -> str | None:
    """How OptionValue.value writes ``value``."""
    if value is None:
        return None
    return {"True": "1", "False": "0"}.get(str(value), str(value))
