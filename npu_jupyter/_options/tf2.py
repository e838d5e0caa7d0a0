"""The TF2 adapter's side of the options: ``npu_device.global_options()`` both ways.

TensorFlow 2 code reaches the NPU through ``npu_device`` (TF Adapter 2.x, TensorFlow 2.6.5): a
script sets attributes on ``npu_device.global_options()`` — ``precision_mode`` at the top,
``dump_config.enable_dump`` in a sub-config — and then calls ``npu_device.open().as_default()``.
Most options keep the TF1 ``parameter_map`` names; the catalogue's ``tf2`` entry says where each one
lives (``profiling_mode`` is ``profiling_config.enable_profiling`` there) and, where the TF2 adapter's
own list of allowed values differs, which values it takes. Options without a ``tf2`` entry (mixed
computing, ``iterations_per_loop``, ...) are not read by the TF2 adapter.

The TF2 adapter checks a value when it is set: a value outside an option's list raises there, so
:func:`tf2_options` refuses the same values with one error naming each option and what it allows.
"""

from __future__ import annotations

from typing import Mapping

from npu_jupyter._options import catalogue
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._options.snapshot import ConfigSnapshot


def tf2_path(key: str) -> str | None:
    """Where ``npu_device.global_options()`` takes option ``key`` (``None``: the TF2 adapter has none)."""
    entry = catalogue.spec(key).tf2
    return None if entry is None else str(entry["path"])


def read_by_tf2() -> list[str]:
    """The options the TF2 adapter reads, in catalogue order."""
    return [spec.key for spec in catalogue.specs() if spec.tf2 is not None]


def tf2_options(config: ConfigSnapshot) -> tuple[dict[str, object], list[str]]:
    """``(attribute path -> value as npu_device takes it, set options the TF2 adapter does not read)``.

    Raises one NpuConfigError listing every set value the TF2 adapter would refuse.
    """
    values: dict[str, object] = {}
    unread: list[str] = []
    problems: list[NpuConfigError] = []
    for key, value in config.changed().items():
        spec = catalogue.spec(key)
        if spec.tf2 is None:
            unread.append(key)
            continue
        try:
            values[str(spec.tf2["path"])] = _tf2_value(spec, value)
        except NpuConfigError as exc:
            problems.append(exc)
    if problems:
        raise NpuConfigError.combine(problems)
    return values, unread


def _tf2_value(spec: catalogue.OptionSpec, value: object) -> object:
    """``value`` in the type the TF2 adapter's option takes, or the error it would raise."""
    assert spec.tf2 is not None  # noqa: S101 - narrows the type: callers pass TF2 options only
    choices = spec.tf2.get("choices")
    if choices is None:
        return value
    for choice in choices:
        if choice == value or str(choice) == str(value) or (isinstance(choice, bool) and choice == bool(value)):
            return choice
    allowed = ", ".join(repr(c) for c in choices)
    raise NpuConfigError(
        f"{spec.key}={value!r}: the TF2 adapter (npu_device) allows only {allowed} for "
        f"global_options().{spec.tf2['path']}",
        option=spec.key,
        value=value,
        allowed=list(choices),
    )


def tf2_code(config: ConfigSnapshot) -> str:
    """A runnable snippet that opens the TF2 NPU device with this config's options."""
    config.validate()
    values, unread = tf2_options(config)
    lines = ["import npu_device", "", "options = npu_device.global_options()"]
    lines += [f"options.{path} = {value!r}" for path, value in values.items()]
    if unread:
        lines.append("# not read by the TF2 adapter (npu_device), left out: " + ", ".join(unread))
    lines.append("npu_device.open().as_default()")
    return "\n".join(lines) + "\n"


def read_tf2_options(options: object) -> dict[str, object]:
    """The options an ``npu_device.global_options()`` object holds: every one set to a non-default value.

    Reads each catalogued path's ``OptionValue`` (``.value`` is the text the adapter passes on, ``True``
    and ``False`` written as "1" and "0"); values left at the adapter's default stay unset.
    """
    found: dict[str, object] = {}
    for spec in catalogue.specs():
        if spec.tf2 is None:
            continue
        option = _walk(options, str(spec.tf2["path"]))
        if option is None:
            continue
        text = getattr(option, "value", None)
        default = getattr(option, "default", None)
        if text is None or (default is not None and text == _as_text(default)):
            continue
        found[spec.key] = catalogue.parse_text(spec.key, str(text))
    return found


def _walk(root: object, path: str) -> object:
    """The object at dotted ``path`` under ``root``, or None where an attribute is missing."""
    node = root
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def _as_text(value: object) -> str:
    """How the TF2 adapter's ``OptionValue.value`` writes ``value``."""
    if value is True:
        return "1"
    if value is False:
        return "0"
    return str(value)


def sides(key: str) -> Mapping[str, bool]:
    """Which adapter side reads option ``key``: ``{"tf1": ..., "tf2": ...}``."""
    spec = catalogue.spec(key)
    return {"tf1": "session" in spec.api or spec.run_config is not None, "tf2": spec.tf2 is not None}
