"""Cross-option rules: what must hold between options (errors) and what is merely suspicious (warnings).

Each rule is a small function over the set options that yields one sentence per finding, naming every option involved.
Sources: docs/contract.md (Options), tests/data/reference/ADAPTER-FACTS.md §1.2/§1.3 (today's adapter, quoted where it
has an error text) and the seed docs; where a seed disagrees with today's adapter, the adapter wins and the message says
so. ``ERROR_RULES`` make ``validate()`` fail; ``WARNING_RULES`` feed ``warnings()``.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Iterator, Mapping, Sequence

from npu_jupyter._options import catalogue
from npu_jupyter._options.grammars import parse_dynamic_dims, parse_input_shape
from npu_jupyter._options.profiling import lenient_profiling_fields

MIXED_PRECISION_MODES = catalogue.mixed_precision_values("precision_mode")
MIXED_PRECISION_V2 = catalogue.mixed_precision_values("precision_mode_v2")
GIB = 1024**3


class View:
    """The set options plus the adapter defaults, for rules to read."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def get(self, key: str) -> Any:  # noqa: ANN401 - an option value of its key's own kind (bool, int, str); each rule compares it to literals of that kind
        """The set value or None."""
        return self.values.get(key)

    def has(self, key: str) -> bool:
        """True when ``key`` is set in the config (absent and None both mean unset)."""
        return self.values.get(key) is not None

    def eff(self, key: str) -> Any:  # noqa: ANN401 - as get(): the value's type depends on the key
        """The set value, else what the adapter uses when the key is absent."""
        value = self.values.get(key)
        return catalogue.spec(key).default if value is None else value


Rule = Callable[[View], Iterator[str]]


# ------------------------------------------------------------------------------------------- errors


def mix_mode_needs_single_iteration(v: View) -> Iterator[str]:
    """NPURunConfig: '"iterations_per_loop" must be 1 with "mix_compile_mode" is True'."""
    if v.eff("mix_compile_mode") and v.eff("iterations_per_loop") != 1:
        yield (
            f"mix_compile_mode=True requires iterations_per_loop=1 (got {v.eff('iterations_per_loop')}): "
            "loop offload is not available in mixed computing"
        )


def dump_needs_path(v: View) -> Iterator[str]:
    """C++: 'if use dump function, dump_path must be set.'."""
    for flag in ("enable_dump", "enable_dump_debug"):
        if v.eff(flag) and not v.get("dump_path"):
            yield f"{flag}=True requires dump_path (an existing writable directory)"


def precision_modes_exclusive(v: View) -> Iterator[str]:
    """C++: "'precision_mode' and 'precision_mode_v2' can not be assigned at the same time."."""
    if v.has("precision_mode") and v.has("precision_mode_v2"):
        yield (
            f"precision_mode ({v.get('precision_mode')!r}) and precision_mode_v2 "
            f"({v.get('precision_mode_v2')!r}) cannot both be set; keep one (precision_mode_v2 is recommended)"
        )


def _outside(v: View, option: str, allowed: Sequence[str]) -> str | None:
    """``"one of …, … (got …)"`` when ``option`` is set to a value outside ``allowed``, else None."""
    if v.has(option) and v.get(option) not in allowed:
        return f"one of {', '.join(allowed)} (got {v.get(option)!r})"
    return None


def mixlist_needs_mixed_mode(v: View) -> Iterator[str]:
    """C++: modify_mixlist needs an explicit mixed precision mode in the same config."""
    if not v.get("modify_mixlist"):
        return
    for option, allowed in (("precision_mode", MIXED_PRECISION_MODES), ("precision_mode_v2", MIXED_PRECISION_V2)):
        if v.has(option):  # precision_mode wins when both are set (the C++ checks it first)
            wrong = _outside(v, option, allowed)
            if wrong:
                yield f"modify_mixlist is set, so {option} must be {wrong}"
            return
    yield (
        "modify_mixlist is set but no mixed precision mode is: set precision_mode to "
        "'allow_mix_precision' (or precision_mode_v2 to 'mixed_float16')"
    )


def implmode_list_needs_mode(v: View) -> Iterator[str]:
    """C++: 'when use optypelist_for_implmode, op_select_implmode must be set.'."""
    if v.has("optypelist_for_implmode") and not v.has("op_select_implmode"):
        yield "optypelist_for_implmode requires op_select_implmode to be set"


def in_out_pair_needs_mix(v: View) -> Iterator[str]:
    """C++: 'mix_compile_mode must be True when use in_out_pair.'."""
    if v.get("in_out_pair") and not v.eff("mix_compile_mode"):
        yield "in_out_pair requires mix_compile_mode=True"


def host_variables_need_mix(v: View) -> Iterator[str]:
    """Docs: variable_placement='Host' requires mixed computing (the adapter does not check it)."""
    if v.get("variable_placement") == "Host" and not v.eff("mix_compile_mode"):
        yield "variable_placement='Host' requires mix_compile_mode=True"


def dynamic_dims_trio(v: View) -> Iterator[str]:
    """C++: 'input_shape, dynamic_dims and dynamic_node_type should use together.'."""
    trio = ("input_shape", "dynamic_dims", "dynamic_node_type")
    present = [k for k in trio if v.has(k)]
    if present and len(present) < 3:
        missing = [k for k in trio if k not in present]
        yield (
            f"input_shape, dynamic_dims and dynamic_node_type must be set together "
            f"({', '.join(present)} set; {', '.join(missing)} missing)"
        )


def gears_match_input_shape(v: View) -> Iterator[str]:
    """Seed: each gear has one value per -1 in input_shape, and there are at least two gears."""
    if not (v.has("input_shape") and v.has("dynamic_dims")):
        return
    try:
        shapes = parse_input_shape(v.get("input_shape"))
        gears = parse_dynamic_dims(v.get("dynamic_dims"))
    except ValueError:
        return  # the per-option grammar check reports it
    unknown = sum(dims.count(-1) for _, dims in shapes)
    if unknown == 0:
        yield "input_shape has no -1 dimension, so dynamic_dims has nothing to gear"
    bad = [i for i, gear in enumerate(gears) if len(gear) != unknown]
    if unknown and bad:
        yield (
            f"dynamic_dims gear {bad[0]} has {len(gears[bad[0]])} values but input_shape has {unknown} "
            "-1 dimensions; every gear needs one value per -1"
        )
    if len(gears) < 2:
        yield f"dynamic_dims must give at least 2 gears (got {len(gears)})"


def hybrid_mode_rules(v: View) -> Iterator[str]:
    """C++: compile_hybrid_mode=1 needs dynamic_node_type=1 and the input_shape trio."""
    if v.get("compile_hybrid_mode") != 1:
        return
    if not all(v.has(k) for k in ("input_shape", "dynamic_dims", "dynamic_node_type")):
        yield "compile_hybrid_mode=1 requires input_shape, dynamic_dims and dynamic_node_type"
    elif v.get("dynamic_node_type") != 1:
        yield "compile_hybrid_mode=1 requires dynamic_node_type=1 (placeholder inputs)"


def dynamic_dims_not_with_mix(v: View) -> Iterator[str]:
    """C++: 'dynamic config can not use with mix compile.'."""
    if v.has("input_shape") and v.eff("mix_compile_mode"):
        yield "input_shape/dynamic_dims (dynamic gears) cannot be used with mix_compile_mode=True"


def compress_weight_exclusive(v: View) -> Iterator[str]:
    """C++: 'enable_compress_weight can not use with compress_weight_conf.' (both keys present)."""
    if v.has("enable_compress_weight") and v.get("compress_weight_conf"):
        yield "enable_compress_weight and compress_weight_conf cannot both be set; keep one"


def lazy_recompile_single_iteration(v: View) -> Iterator[str]:
    """C++: 'iterations_per_loop only support 1 in lazy_recompile mode.'."""
    if (
        v.eff("dynamic_input")
        and v.eff("dynamic_graph_execute_mode") == "lazy_recompile"
        and v.eff("iterations_per_loop") != 1
    ):
        yield (
            f"dynamic_input=True with dynamic_graph_execute_mode='lazy_recompile' requires "
            f"iterations_per_loop=1 (got {v.eff('iterations_per_loop')})"
        )


def accelerate_needs_plain_precision(v: View) -> Iterator[str]:
    """ExperimentalConfig doc: accelerate_train_mode only with allow_fp32_to_fp16/must_keep_origin_dtype/origin."""
    if not v.has("experimental_accelerate_train_mode"):
        return
    for option, allowed in (
        ("precision_mode", ("allow_fp32_to_fp16", "must_keep_origin_dtype")),
        ("precision_mode_v2", ("origin",)),
    ):
        wrong = _outside(v, option, allowed)
        if wrong:
            yield f"experimental_accelerate_train_mode needs {option} unset or {wrong}"


ERROR_RULES: tuple[Rule, ...] = (
    mix_mode_needs_single_iteration,
    dump_needs_path,
    precision_modes_exclusive,
    mixlist_needs_mixed_mode,
    implmode_list_needs_mode,
    in_out_pair_needs_mix,
    host_variables_need_mix,
    dynamic_dims_trio,
    gears_match_input_shape,
    hybrid_mode_rules,
    dynamic_dims_not_with_mix,
    compress_weight_exclusive,
    lazy_recompile_single_iteration,
    accelerate_needs_plain_precision,
)


# ------------------------------------------------------------------------------------------- warnings


def ignored_and_deprecated(v: View) -> Iterator[str]:
    """Options today's adapter ignores, and deprecated ones, with their replacement."""
    for key, value in v.values.items():
        if value is None:
            continue
        s = catalogue.spec(key)
        if s.ignored:
            yield f"{key} is ignored by today's adapter (setting it has no effect)"
        elif s.deprecated:
            instead = f"; use {s.deprecated_by} instead" if s.deprecated_by else ""
            yield f"{key} is deprecated{instead}"


def training_trace_points(v: View) -> Iterator[str]:
    """Seed (sess.run) requires fp_point/bp_point with training_trace; today's adapter finds them itself."""
    data = _profiling_json(v)
    if data.get("training_trace") == "on":
        empty = [p for p in ("fp_point", "bp_point") if not data.get(p)]
        if empty:
            yield (
                f"profiling_options has training_trace on with empty {' and '.join(empty)}: today's adapter "
                "picks them automatically (the older sess.run doc says they must be set)"
            )


def memory_sizes(v: View) -> Iterator[str]:
    """Old docs: graph + variable memory at most 31 GiB; today graph_memory_max_size has no effect."""
    graph, var = v.get("graph_memory_max_size"), v.get("variable_memory_max_size")
    if graph is None or var is None or not (str(graph).isdigit() and str(var).isdigit()):
        return
    if int(graph) + int(var) > 31 * GIB:
        yield (
            "graph_memory_max_size + variable_memory_max_size exceed 31 GiB, the cap in the older "
            "sess.run doc (today's adapter ignores graph_memory_max_size)"
        )


def both_dumps(v: View) -> Iterator[str]:
    """Docs: data dump and overflow dump are mutually exclusive (the adapter does not check)."""
    if v.eff("enable_dump") and v.eff("enable_dump_debug"):
        yield "enable_dump and enable_dump_debug are documented as mutually exclusive; use one at a time"


def unused_dependents(v: View) -> Iterator[str]:
    """Options that are only read when another option switches them on."""
    needs = (
        (("dump_step", "dump_mode", "dump_data", "dump_layer"), "enable_dump"),
        (("dump_debug_mode",), "enable_dump_debug"),
        (("profiling_options",), "profiling_mode"),
        (("dynamic_graph_execute_mode", "dynamic_inputs_shape_range"), "dynamic_input"),
        (("work_path", "distribute_config"), "aoe_mode"),
        (("in_out_pair_flag",), "in_out_pair"),
    )
    for dependents, switch in needs:
        if v.eff(switch):
            continue
        for key in dependents:
            if v.has(key):
                yield f"{key} has no effect unless {switch} is set"


def implmode_superseded(v: View) -> Iterator[str]:
    """Docs: op_precision_mode wins over op_select_implmode/optypelist_for_implmode."""
    if v.get("op_precision_mode"):
        for key in ("op_select_implmode", "optypelist_for_implmode"):
            if v.has(key):
                yield f"{key} is overridden by op_precision_mode (only op_precision_mode takes effect)"


def small_channel_forced(v: View) -> Iterator[str]:
    """Adapter: graph_run_mode 0 forces enable_small_channel=1."""
    if v.eff("graph_run_mode") == 0 and v.get("enable_small_channel") == 0:
        yield "enable_small_channel=0 is overridden: graph_run_mode=0 (inference) forces enable_small_channel=1"


def dtype_overrides_ineffective(v: View) -> Iterator[str]:
    """Docs: customize_dtypes/keep_dtype have no effect under must_keep_origin_dtype / origin."""
    if v.get("customize_dtypes") and (
        v.get("precision_mode") == "must_keep_origin_dtype" or v.get("precision_mode_v2") == "origin"
    ):
        yield "customize_dtypes has no effect under must_keep_origin_dtype / origin precision"


def shape_range_vs_dims(v: View) -> Iterator[str]:
    """Docs: dynamic_dims wins over dynamic_inputs_shape_range."""
    if v.get("dynamic_inputs_shape_range") and v.has("dynamic_dims"):
        yield "dynamic_inputs_shape_range has no effect together with dynamic_dims (dynamic_dims wins)"


def device_list_needs_rank(v: View) -> Iterator[str]:
    """Seed: local_device_list is used with local_rank_id."""
    if v.has("local_device_list") and not v.has("local_rank_id"):
        yield "local_device_list is used together with local_rank_id, which is not set"


def loop_offload_needs_getnext(v: View) -> Iterator[str]:
    """Docs: iterations_per_loop > 1 needs the GetNext offload (enable_data_pre_proc=True)."""
    if v.eff("iterations_per_loop") > 1 and not v.eff("enable_data_pre_proc"):
        yield (
            "iterations_per_loop > 1 needs enable_data_pre_proc=True (GetNext offload); "
            "a session config defaults it to False"
        )


def compile_cache_disabled(v: View) -> Iterator[str]:
    """Docs: a non-zero op_debug_level disables the operator compile cache."""
    if v.get("op_compiler_cache_mode") in ("enable", "force") and v.get("op_debug_level") not in (None, 0, 3):
        yield (
            f"op_compiler_cache_mode={v.get('op_compiler_cache_mode')!r} is ignored while op_debug_level="
            f"{v.get('op_debug_level')} (the cache only works with op_debug_level 0 or 3)"
        )


def sync_timeout_vs_hccl(v: View) -> Iterator[str]:
    """Docs: in clusters stream_sync_timeout (ms) must exceed hccl_timeout (s)."""
    stream, hccl = v.get("stream_sync_timeout"), v.get("hccl_timeout")
    if stream is not None and stream != -1 and hccl is not None and stream <= hccl * 1000:
        yield (
            f"stream_sync_timeout ({stream} ms) should exceed hccl_timeout ({hccl} s = {hccl * 1000} ms) "
            "in cluster training"
        )


def offline_off(v: View) -> Iterator[str]:
    """use_off_line=False makes the adapter skip the graph."""
    if v.get("use_off_line") is False:
        yield "use_off_line=False: the adapter skips partitioning, so nothing runs on the NPU"


def dump_values_swapped(v: View) -> Iterator[str]:
    """Real scripts swap dump_path with a dump_mode value."""
    if v.get("dump_path") in ("input", "output", "all"):
        yield f"dump_path={v.get('dump_path')!r} looks like a dump_mode value, not a directory"


def dump_step_empty_items(v: View) -> Iterator[str]:
    """The adapter accepts empty items in dump_step ('0||5'), which is most likely a typo."""
    step = v.get("dump_step")
    if step and "" in step.split("|"):
        yield f"dump_step {step!r} has an empty item (the adapter accepts it, but it selects no step)"


def bf16_on_ascend910(v: View) -> Iterator[str]:
    """bf16 modes fail on SoCs without fp32->bf16 conversion (Ascend910; tests/data/reference/ADAPTER-FACTS.md §4.1)."""
    bf16 = {"allow_mix_precision_bf16", "allow_fp32_to_bf16", "mixed_bfloat16"}
    mode = v.get("precision_mode") or v.get("precision_mode_v2")
    soc = v.get("soc_config") or "Ascend910"
    if mode in bf16 and _soc_table(soc) == "ascend910":
        yield f"{mode!r} needs bfloat16 support, which {soc} (Atlas training series) lacks: GE will fail"


def _soc_table(soc: str) -> str | None:
    """Which op table a soc_config spelling selects; the SoC families have one owner, ops.library."""
    from npu_jupyter._ops.library import resolve_soc

    try:
        return resolve_soc(soc)
    except ValueError:
        return None  # an unknown SoC: its own check reports it; no bf16 claim about it


def inference_only_options(v: View) -> Iterator[str]:
    """Seed: graph_max_parallel_model_num and quant_dumpable apply to online inference only."""
    if v.eff("graph_run_mode") != 1:
        return
    if (v.get("graph_max_parallel_model_num") or 1) > 1:
        yield "graph_max_parallel_model_num > 1 only applies to online inference (graph_run_mode=0)"
    if v.get("quant_dumpable") == "1":
        yield "quant_dumpable only applies to online inference (graph_run_mode=0)"


WARNING_RULES: tuple[Rule, ...] = (
    ignored_and_deprecated,
    training_trace_points,
    memory_sizes,
    both_dumps,
    unused_dependents,
    implmode_superseded,
    small_channel_forced,
    dtype_overrides_ineffective,
    shape_range_vs_dims,
    device_list_needs_rank,
    loop_offload_needs_getnext,
    compile_cache_disabled,
    sync_timeout_vs_hccl,
    offline_off,
    dump_values_swapped,
    dump_step_empty_items,
    bf16_on_ascend910,
    inference_only_options,
)


def _profiling_json(v: View) -> dict[str, Any]:
    """profiling_options as a dict ({} when unset or not a JSON object)."""
    return lenient_profiling_fields(v.get("profiling_options"))


def errors(values: Mapping[str, Any]) -> list[str]:
    """Every broken cross-option rule, one sentence each."""
    view = View(values)
    return [msg for rule in ERROR_RULES for msg in rule(view)]


def warnings(values: Mapping[str, Any], unasked: Collection[str] = ()) -> list[str]:
    """Every softer finding, one sentence each.

    ``unasked`` names keys a tool wrote without the user asking (NPUEstimator's own defaults): a
    finding those keys raise by themselves is not reported, one that involves a user's key is.
    """
    view = View(values)
    found = [msg for rule in WARNING_RULES for msg in rule(view)]
    if not unasked:
        return found
    own = View({k: v for k, v in values.items() if k in unasked})
    theirs = {msg for rule in WARNING_RULES for msg in rule(own)}
    return [msg for msg in found if msg not in theirs]
