"""NpuConfig <-> ``ConfigProto`` with the ``NpuOptimizer`` custom optimizer.

Building follows the adapter docs' sess.run recipe (use_off_line, each option in its AttrValue field,
remapping and memory_optimization OFF). Reading follows what the C++ adapter does: every custom
optimizer named exactly ``NpuOptimizer`` is read in order, later entries overwriting earlier ones key by
key; keys it does not know are ignored; a value is read from the option's own field only. Whatever the
adapter would ignore becomes a ``warnings()`` entry with a "did you mean" (or an error with
``strict=True``). TensorFlow's protobuf modules are imported inside the functions only.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Mapping, cast

from npu_jupyter._options import catalogue
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._options.snapshot import ConfigSnapshot, Note, joined_problems
from npu_jupyter._tensorflow_import import require_tensorflow

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._tf_types import AttrValue, ConfigProto, CustomGraphOptimizer

OPTIMIZER_NAME = "NpuOptimizer"


def _protos() -> tuple[ModuleType, ModuleType]:
    """config_pb2 and rewriter_config_pb2 (lighter than importing all of TensorFlow)."""
    require_tensorflow("building a ConfigProto")
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

    return config_pb2, rewriter_config_pb2


def to_config_proto(values: Mapping[str, object], base: ConfigProto | None = None) -> ConfigProto:
    """A ConfigProto carrying the set options ``values``; ``base`` (left untouched) is copied first.

    An existing ``NpuOptimizer`` entry in ``base`` is updated (its other keys kept); otherwise one is
    added. ``use_off_line`` is written as True unless ``values`` sets it. Checking is the caller's
    (``ConfigSnapshot.to_config_proto`` validates first).
    """
    config_pb2, rewriter_config_pb2 = _protos()
    proto = config_pb2.ConfigProto()
    if base is not None:
        proto.CopyFrom(base)
    rewrite = proto.graph_options.rewrite_options
    custom = next((c for c in rewrite.custom_optimizers if c.name == OPTIMIZER_NAME), None)
    if custom is None:
        custom = rewrite.custom_optimizers.add()
        custom.name = OPTIMIZER_NAME
    if "use_off_line" not in values:
        custom.parameter_map["use_off_line"].b = True
    for key, value in values.items():
        _write(custom.parameter_map[key], catalogue.spec(key).field, value)
    rewrite.remapping = rewriter_config_pb2.RewriterConfig.OFF
    # The docs (and the adapter's npu_config_proto) assign the Toggle value OFF (2) to this MemOptType
    # field, which protobuf stores as MANUAL; writing the same number keeps our protos identical to theirs.
    rewrite.memory_optimization = rewriter_config_pb2.RewriterConfig.OFF
    return cast("ConfigProto", proto)


def without_npu_entries(proto: ConfigProto) -> ConfigProto:
    """A copy of ``proto`` minus its NpuOptimizer entries (``proto`` itself is left untouched).

    Used where those entries were already merged into a config: left in place, an entry would keep a
    key that a higher layer unset (``--precision`` clearing the user's ``precision_mode_v2``), and the
    adapter refuses both precision keys at once.
    """
    clone = type(proto)()
    clone.CopyFrom(proto)
    optimizers = clone.graph_options.rewrite_options.custom_optimizers
    for index in reversed(range(len(optimizers))):
        if optimizers[index].name == OPTIMIZER_NAME:
            del optimizers[index]
    return clone


def has_npu_optimizer(proto: ConfigProto) -> bool:
    """Whether ``proto`` has a custom optimizer the adapter reads (named exactly ``NpuOptimizer``)."""
    return any(entry.name == OPTIMIZER_NAME for entry in proto.graph_options.rewrite_options.custom_optimizers)


def _write(attr: AttrValue, field: str, value: object) -> None:
    """Store ``value`` in the AttrValue field the adapter reads."""
    if field == "b":
        attr.b = bool(value)
    elif field == "i":
        attr.i = int(cast("int", value))
    else:
        attr.s = str(value).encode("utf-8")


def _read(attr: AttrValue) -> tuple[str | None, object]:
    """(field letter, Python value) of an AttrValue; (None, None) when no field is set."""
    which = attr.WhichOneof("value")
    if which == "b":
        return "b", bool(attr.b)
    if which == "i":
        return "i", int(attr.i)
    if which == "s":
        return "s", bytes(attr.s)
    if which is None:
        return None, None
    return which, getattr(attr, which)


def read_config_proto(proto: ConfigProto | bytes | bytearray, *, strict: bool = False) -> ConfigSnapshot:
    """The options the adapter would read from ``proto`` (a ConfigProto or its serialized bytes).

    ``use_off_line=True`` comes back unset: it is the adapter's default and what ``to_config_proto``
    writes for an unset option, so reading back what was written gives the same options. Remarks (keys
    the adapter ignores, wrong fields, bad values kept) come with the snapshot; ``strict`` raises them.
    """
    if isinstance(proto, (bytes, bytearray)):
        config_pb2, _ = _protos()
        proto = cast("ConfigProto", config_pb2.ConfigProto.FromString(bytes(proto)))
    notes: list[Note] = []
    read: dict[str, tuple[object, str | None]] = {}
    optimizers = list(proto.graph_options.rewrite_options.custom_optimizers)
    for custom in optimizers:
        if custom.name != OPTIMIZER_NAME:
            notes.extend(_foreign_optimizer(custom))
            continue
        for key in sorted(custom.parameter_map):
            outcome = _import_key(key, custom.parameter_map[key])
            if outcome is None:
                continue
            if isinstance(outcome, str):
                notes.append((key, outcome))
                read.pop(key, None)
            else:
                read[key] = outcome
    if not any(c.name == OPTIMIZER_NAME for c in optimizers):
        notes.append(
            (
                None,
                (
                    "the ConfigProto has no custom optimizer named 'NpuOptimizer', so the adapter "
                    "offloads nothing (add one, e.g. with NpuConfig().to_config_proto(base=proto))"
                ),
            )
        )
    problems = [text for _, text in notes] + [note for _, note in read.values() if note]
    if strict and problems:
        raise NpuConfigError(joined_problems(problems, "importing the ConfigProto"), problems=problems)
    kept = {key: value for key, (value, _) in read.items() if not (key == "use_off_line" and value is True)}
    remarks = [(key, note) for key, (_, note) in read.items() if key in kept and note is not None]
    return ConfigSnapshot(kept, raw={key for key, _ in remarks}, notes=(*remarks, *notes))


def _foreign_optimizer(custom: CustomGraphOptimizer) -> list[Note]:
    """A remark for a custom optimizer the adapter skips because of its name."""
    if not custom.parameter_map and custom.name != "":
        return []
    name = custom.name or "(no name)"
    keys = ", ".join(sorted(custom.parameter_map)) or "no keys"
    return [
        (
            None,
            (
                f"custom optimizer {name!r} is ignored by the adapter, which only reads the one named "
                f"'NpuOptimizer' (did you mean custom_op.name = 'NpuOptimizer'?); its {keys} have no effect"
            ),
        )
    ]


def _import_key(key: str, attr: AttrValue) -> tuple[object, str | None] | str | None:
    """(value, remark-if-invalid) for a key the adapter reads, or a remark string when it ignores it."""
    field, value = _read(attr)
    try:
        spec = catalogue.spec(key)
    except NpuConfigError as exc:
        return f"parameter_map key {key!r} is ignored by the adapter: {str(exc).split(': ', 1)[-1]}"
    if field is None:
        return f"parameter_map[{key!r}] has no value set; the adapter ignores it"
    if field != spec.field:
        shown = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        return (
            f"{key} was set through .{field} ({shown!r}) but the adapter reads .{spec.field}, so it sees an "
            f"empty value and ignores it (did you mean parameter_map[{key!r}].{spec.field} = "
            f"{_suggested_value(spec, shown)}?)"
        )
    try:
        return spec.check(value), None
    except NpuConfigError as exc:
        kept = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        return kept, f"{exc} (kept as the adapter reads it)"


def _suggested_value(spec: catalogue.OptionSpec, shown: object) -> str:
    """A plausible right-field spelling of a wrong-field value, for the hint."""
    if spec.field == "s":
        if isinstance(shown, bool) and spec.choices and str(shown).lower() in spec.choices:
            return f"b{str(shown).lower()!r}"
        return "b'...'" if isinstance(shown, bool) else f"b{str(shown)!r}"
    if spec.field == "i":
        return str(int(str(shown))) if str(shown).lstrip("-").isdigit() else "<int>"
    return "True" if shown else "False"
