"""NPURunConfig keyword arguments and runnable code snippets for a config, and the way back from kwargs.

``to_run_config_kwargs`` nests the options that NPURunConfig takes through helper classes the way
those classes take them: ``{"dump_config": {"enable_dump": True, "dump_path": "/d"}}`` stands for
``dump_config=DumpConfig(enable_dump=True, dump_path="/d")``; ``experimental_config`` may hold a
nested ``graph_memory_optimize_config``. Session-only options (``run_config`` null in the catalogue)
are left out; the estimator snippet carries them in its ``session_config``, whose NpuOptimizer entry
the adapter reads before the one NPUEstimator adds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, cast

from npu_jupyter._options import catalogue
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._options.snapshot import ConfigSnapshot, Note, joined_problems

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._tf_types import ConfigProto

HELPER_CLASSES = {
    "dump_config": "DumpConfig",
    "profiling_config": "ProfilingConfig",
    "memory_config": "MemoryConfig",
    "experimental_config": "ExperimentalConfig",
    "graph_memory_optimize_config": "GraphMemoryOptimizeConfig",
    "dynamic_input_config": "DynamicInputConfig",
}
_DYNAMIC_INPUT_ORDER = ("input_shape", "dynamic_dims", "dynamic_node_type", "compile_hybrid_mode")


def to_run_config_kwargs(config: ConfigSnapshot) -> dict[str, object]:
    """NPURunConfig keyword arguments for every set option that NPURunConfig accepts."""
    kwargs: dict[str, Any] = {}
    for key, value in config.changed().items():
        spec = catalogue.spec(key)
        if not spec.run_config:
            continue
        if spec.accepts_int and str(value).isdigit():
            value = int(str(value))  # NPURunConfig writes str(value); users pass the number
        node = kwargs
        *parents, leaf = spec.run_config.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return kwargs


def session_only_options(config: ConfigSnapshot) -> dict[str, object]:
    """Set options that NPURunConfig has no argument for (they go into session_config)."""
    return {k: v for k, v in config.changed().items() if not catalogue.spec(k).run_config}


def _flatten(kwargs: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """{'dump_config': {'dump_path': 'x'}} and {'dump_config.dump_path': 'x'} -> {'dump_config.dump_path': 'x'}."""
    flat: dict[str, object] = {}
    for name, value in kwargs.items():
        path = f"{prefix}{name}"
        if isinstance(value, Mapping) and path.rsplit(".", maxsplit=1)[-1] in HELPER_CLASSES:
            flat.update(_flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def read_run_config_kwargs(
    kwargs: Mapping[str, object], *, strict: bool = False, estimator_defaults: bool = False
) -> ConfigSnapshot:
    """The options ``NPURunConfig(**kwargs)`` would write, as a snapshot (``NpuConfig.from_run_config_kwargs``).

    By default only the arguments given are taken. ``estimator_defaults=True`` adds what NPUEstimator
    writes on its own (NPURunConfig's defaults for the keys it always writes, e.g. enable_data_pre_proc
    True and hcom_parallel True, which differ from a bare session's C++ defaults), so the result is the
    parameter_map the Estimator really hands the adapter.
    RunConfig arguments that are not NPU options (model_dir, ...) are skipped; unknown arguments and
    wrong-typed values become ``warnings()`` entries (``strict=True`` raises).

    ``session_config`` (a ConfigProto or its bytes) is folded in as the adapter reads it: its ``NpuOptimizer`` entries
    come first and the entry NPUEstimator appends overrides them key by key (tests/data/reference/ADAPTER-FACTS.md
    §0.1), so a key set both ways takes the NPURunConfig value. Options the estimator writes on its own are not the
    user's choice: ``warnings()`` stays silent about those (a deprecated or ineffective key the user never passed is
    nothing for them to fix).
    """
    by_path = catalogue.by_run_config_path()
    plain = set(catalogue.run_config_only_kwargs())
    notes: list[Note] = []
    values: dict[str, tuple[object, str | None]] = {}
    session = _session_config_values(kwargs.get("session_config"), notes)
    for path, value in _flatten(kwargs).items():
        spec = by_path.get(path)
        if spec is None:
            if path in plain:
                continue
            notes.append((None, _unknown_kwarg(path)))
            continue
        if value is None:
            continue
        try:
            values[spec.key] = (spec.check(value), None)
        except NpuConfigError as exc:
            try:
                raw = spec.convert(value)  # right type, content the adapter would still pass on
            except NpuConfigError:
                notes.append(
                    (
                        spec.key,
                        (
                            f"NPURunConfig argument {path}={value!r} has the wrong type for "
                            f"{spec.key} ({spec.allowed_text()}); it cannot be written"
                        ),
                    )
                )
            else:
                values[spec.key] = (raw, f"{exc} (kept as NPURunConfig writes it)")
    problems = [t for _, t in notes] + [n for _, n in values.values() if n]
    if strict and problems:
        raise NpuConfigError(joined_problems(problems, "in the NPURunConfig arguments"), problems=problems)
    unasked: set[str] = set()
    if estimator_defaults:
        for key, value in _estimator_writes(kwargs).items():
            if key not in values:
                values[key] = (value, None)
                unasked.add(key)
    for key, value_note in session.items():  # the user's session_config entry is read first
        if key not in values:
            values[key] = value_note
            unasked.discard(key)
    remarks = [(key, note) for key, (_, note) in values.items() if note is not None]
    return ConfigSnapshot(
        {key: value for key, (value, _) in values.items()},
        raw={key for key, _ in remarks},
        notes=(*remarks, *notes),
        unasked=unasked,
    )


def _session_config_values(session_config: object, notes: list[Note]) -> dict[str, tuple[object, str | None]]:
    """(value, import remark) per NpuOptimizer key of a RunConfig's ``session_config``; remarks to ``notes``.

    Read with the ConfigProto importer, so a bad key or wrong field gets the same remark as there. A
    session_config without an NpuOptimizer entry is normal here (NPUEstimator adds one), so that remark
    is dropped.
    """
    if session_config is None:
        return {}
    from npu_jupyter._options.proto import OPTIMIZER_NAME, read_config_proto

    try:
        imported = read_config_proto(cast("ConfigProto", session_config))
    except Exception as exc:  # noqa: BLE001 - any unreadable object is one remark, not a traceback
        notes.append(
            (
                None,
                (
                    f"NPURunConfig argument session_config could not be read as a ConfigProto "
                    f"({type(exc).__name__}: {exc}); its NpuOptimizer options are not included"
                ),
            )
        )
        return {}
    changed = imported.values
    keyed = {key: text for key, text in imported.notes if key is not None}
    for key, text in imported.notes:
        if key is None and f"no custom optimizer named '{OPTIMIZER_NAME}'" in text:
            continue
        if key is None or key not in changed:
            notes.append((key, f"session_config: {text}"))
    return {key: (value, keyed.get(key)) for key, value in changed.items()}


def _estimator_writes(kwargs: Mapping[str, object]) -> dict[str, object]:
    """Keys NPUEstimator writes without being asked, given which arguments (and helper objects) were passed."""
    given = {path.split(".")[0] for path, value in _flatten(kwargs).items() if value is not None}
    given |= {name for name, value in kwargs.items() if isinstance(value, Mapping)}
    written = {}
    for spec in catalogue.specs():
        if spec.estimator_writes is None:
            continue
        value, when = spec.estimator_writes
        if when is None or when in given:
            written[spec.key] = value
    return written


def _unknown_kwarg(path: str) -> str:
    """The remark for an NPURunConfig argument that carries no session option."""
    leaf = path.rsplit(".", maxsplit=1)[-1]
    try:
        spec = catalogue.spec(leaf)
    except NpuConfigError as exc:
        return f"NPURunConfig argument {path!r} is not an NPU option: {str(exc).split(': ', 1)[-1]}"
    if spec.run_config is None:
        return f"{leaf} is a session-only option; NPURunConfig has no {path!r} argument (put it in session_config)"
    return f"NPURunConfig argument {path!r} is misplaced (did you mean {spec.run_config!r}?)"


# ------------------------------------------------------------------------------------------- code


def _literal(value: object) -> str:
    """A Python literal for an option value (repr escapes user text safely)."""
    return repr(value)


def _param_lines(values: Mapping[str, object], target: str) -> list[str]:
    """``custom_op.parameter_map[...]`` lines, each value in its proto field."""
    lines = []
    for key, value in values.items():
        field = catalogue.spec(key).field
        if field == "s":
            lines.append(f"{target}.parameter_map[{key!r}].s = tf.compat.as_bytes({_literal(str(value))})")
        else:
            lines.append(f"{target}.parameter_map[{key!r}].{field} = {_literal(value)}")
    return lines


def session_code(config: ConfigSnapshot) -> str:
    """sess.run style: a ConfigProto built by hand exactly as ``to_config_proto`` builds it."""
    config.validate()
    values = dict(config.changed())
    if "use_off_line" not in values:
        values = {"use_off_line": True, **values}
    lines = [
        "import tensorflow as tf",
        "from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig",
        "",
        "config = tf.compat.v1.ConfigProto()",
        "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()",
        'custom_op.name = "NpuOptimizer"',
        *_param_lines(values, "custom_op"),
        "config.graph_options.rewrite_options.remapping = RewriterConfig.OFF",
        "config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF",
        "",
        "# with tf.compat.v1.Session(config=config) as sess: ...",
    ]
    return "\n".join(lines) + "\n"


def _call(name: str, kwargs: Mapping[str, object], indent: str) -> str:
    """``Name(a=1, b=HelperClass(...))`` over several lines."""
    if name == "DynamicInputConfig":  # all four arguments are positional and required
        args = [_literal(kwargs.get(k, 0 if k == "compile_hybrid_mode" else None)) for k in _DYNAMIC_INPUT_ORDER]
        return f"DynamicInputConfig({', '.join(args)})"
    inner = indent + "    "
    parts = []
    for key, value in kwargs.items():
        if isinstance(value, dict):
            parts.append(f"{inner}{key}={_call(HELPER_CLASSES[key], value, inner)},")
        else:
            parts.append(f"{inner}{key}={_literal(value)},")
    if not parts:
        return f"{name}()"
    return f"{name}(\n" + "\n".join(parts) + f"\n{indent})"


def estimator_code(config: ConfigSnapshot) -> str:
    """NPUEstimator style: ``NPURunConfig(...)`` with helper classes; session-only options in session_config."""
    config.validate()
    kwargs = to_run_config_kwargs(config)
    extra = session_only_options(config)
    used = sorted({HELPER_CLASSES[k] for k in _nested_names(kwargs)})
    lines = [
        "import tensorflow as tf",
        "from npu_bridge.npu_init import *",
        f"from npu_bridge.estimator.npu.npu_config import {', '.join(['NPURunConfig', *used])}",
        "",
    ]
    if extra:
        lines += [
            "# Options NPURunConfig has no argument for: the adapter also reads this NpuOptimizer entry.",
            "session_config = tf.compat.v1.ConfigProto()",
            "custom_op = session_config.graph_options.rewrite_options.custom_optimizers.add()",
            'custom_op.name = "NpuOptimizer"',
            *_param_lines(extra, "custom_op"),
            "",
        ]
        kwargs = {**kwargs, "session_config": _SessionConfigName()}
    lines.append(f"config = {_call('NPURunConfig', kwargs, '')}")
    lines.append("# estimator = NPUEstimator(model_fn=model_fn, config=config)")
    return "\n".join(lines) + "\n"


class _SessionConfigName:
    """Renders as the bare name ``session_config`` inside generated code."""

    def __repr__(self) -> str:
        return "session_config"


def _nested_names(kwargs: Mapping[str, object]) -> list[str]:
    """Helper-class argument names used anywhere in ``kwargs``."""
    names = []
    for key, value in kwargs.items():
        if isinstance(value, dict):
            names.append(key)
            names.extend(_nested_names(value))
    return names


def to_code(config: ConfigSnapshot, api: str = "session") -> str:
    """A runnable snippet for ``api`` "session" (sess.run / ConfigProto), "estimator" (NPURunConfig) or
    "tf2" (the TF2 adapter's ``npu_device.global_options()``).
    """
    if api == "session":
        return session_code(config)
    if api == "estimator":
        return estimator_code(config)
    if api == "tf2":
        from npu_jupyter._options.tf2 import tf2_code

        return tf2_code(config)
    raise NpuConfigError(
        f"to_code: api must be 'session', 'estimator' or 'tf2', got {api!r}",
        value=api,
        allowed=["session", "estimator", "tf2"],
    )
