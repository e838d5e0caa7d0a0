"""The catalogue holds every option of the seed docs and of today's adapter, with consistent metadata."""

from __future__ import annotations

import re

import pytest

from npu_jupyter._options import catalogue
from npu_jupyter._options.errors import NpuConfigError

# Words that stand alone on a line in the seeds but are headings or NPURunConfig-only helpers.
NPURUNCONFIG_NON_KEYS = {"distribute", "memory_config", "dump_config", "profiling_config", "experimental_config"}
HEADINGS = {"Option", "Description", "Debugging", "Profiling", "AOE", "NA"}


def _sess_run_names(text: str) -> set[str]:
    """Option names of the sess.run table: bare identifier lines and parameter_map examples."""
    names = {line.strip() for line in text.splitlines() if re.fullmatch(r"[a-z][a-z0-9_]*", line.strip())}
    names |= set(re.findall(r'parameter_map\[["\']([A-Za-z0-9_]+)["\']\]', text))
    return names - HEADINGS


def _run_config_names(text: str) -> set[str]:
    """NPURunConfig option names: bare identifier lines and NPURunConfig(name=...) examples."""
    names = {line.strip() for line in text.splitlines() if re.fullmatch(r"[a-z][a-z0-9_]*", line.strip())}
    names |= set(re.findall(r"NPURunConfig\(\s*([a-z_0-9]+)\s*=", text))
    return names - HEADINGS - NPURUNCONFIG_NON_KEYS


def test_every_sess_run_seed_option_is_in_the_catalogue(seed_text):
    names = _sess_run_names(seed_text("session-options-sess-run.zh.txt"))
    assert len(names) == 52  # the rows of the sess.run table
    assert sorted(names - set(catalogue.keys())) == []


def test_every_npu_run_config_seed_option_has_its_run_config_argument(seed_text):
    names = _run_config_names(seed_text("npu-run-config-options.txt"))
    assert len(names) == 52  # the option rows of the NPURunConfig tables
    by_path = catalogue.by_run_config_path()
    missing = sorted(n for n in names if n not in by_path)
    assert missing == []


def test_experimental_config_seed_members_map_to_experimental_config_paths(seed_text):
    text = seed_text("experimental-config.txt")
    members = {"graph_compiler_cache_dir", "accelerate_train_mode"}
    assert all(m in text for m in members)
    by_path = catalogue.by_run_config_path()
    assert {m: by_path[f"experimental_config.{m}"].key for m in members} == {
        "graph_compiler_cache_dir": "graph_compiler_cache_dir",
        "accelerate_train_mode": "experimental_accelerate_train_mode",
    }


@pytest.mark.parametrize(
    "helper, attribute",
    [
        ("DumpConfig", "dump_config"),
        ("ProfilingConfig", "profiling_config"),
        ("MemoryConfig", "memory_config"),
        ("ExperimentalConfig", "experimental_config"),
    ],
)
def test_every_helper_config_argument_of_the_adapter_is_reachable(helper, attribute, shared):
    facts = (shared / "ADAPTER-FACTS.md").read_text(encoding="utf-8")
    signatures = [s for s in re.findall(rf"`{helper}\((.*?)\)`", facts, flags=re.DOTALL) if "=" in s]
    assert signatures, helper
    arguments = {a.split("=")[0].strip() for a in signatures[0].replace("\n", " ").split(",")}
    paths = set(catalogue.by_run_config_path())
    if helper == "ExperimentalConfig":
        arguments.discard("graph_memory_optimize_config")  # an object; its graph_slice is checked below
        assert "experimental_config.graph_memory_optimize_config.graph_slice" in paths
    missing = sorted(a for a in arguments if f"{attribute}.{a}" not in paths)
    assert missing == []


def test_dynamic_input_config_arguments_are_reachable():
    paths = set(catalogue.by_run_config_path())
    for argument in ("input_shape", "dynamic_dims", "dynamic_node_type", "compile_hybrid_mode"):
        assert f"dynamic_input_config.{argument}" in paths


def test_seed_examples_use_the_field_the_catalogue_documents(seed_text):
    text = "\n".join(
        seed_text(n) for n in ("session-options-sess-run.zh.txt", "mixed-computing.txt", "mixed-precision.txt")
    )
    examples = re.findall(r'parameter_map\[["\']([A-Za-z0-9_]+)["\']\]\.([bis])\b', text)
    assert len(examples) > 40
    wrong = {(k, f) for k, f in examples if catalogue.spec(k).field != f}
    assert wrong == set()


def test_adapter_fact_keys_from_the_tables_are_all_catalogued(shared):
    facts = (shared / "ADAPTER-FACTS.md").read_text(encoding="utf-8")
    section = facts[facts.index("### 1.2") : facts.index("### 1.3")]
    rows = re.findall(r"^\| `?[^|]*\| `([a-zA-Z_0-9]+)` \| ([bis]) \|", section, flags=re.MULTILINE)
    assert len(rows) > 30
    mismatched = [(k, f) for k, f in rows if k in catalogue.keys() and catalogue.spec(k).field != f]
    missing = [k for k, _ in rows if k not in catalogue.keys()]
    assert (missing, mismatched) == ([], [])


def test_every_spec_has_group_doc_api_and_a_consistent_default():
    groups = set(catalogue.groups())
    for spec in catalogue.specs():
        assert spec.group in groups, spec.key
        assert spec.doc and "\n" not in spec.doc, spec.key
        assert set(spec.api) <= {"session", "estimator"} and "session" in spec.api, spec.key
        assert (spec.run_config is None) == ("estimator" not in spec.api), spec.key
        if spec.default is not None:
            assert isinstance(spec.default, spec.python_type), spec.key
            if spec.choices is not None:
                assert spec.default in spec.choices, spec.key


def test_run_config_paths_name_the_helper_class_attribute():
    assert catalogue.spec("profiling_mode").run_config == "profiling_config.enable_profiling"
    assert catalogue.spec("dump_path").run_config == "dump_config.dump_path"
    assert (
        catalogue.spec("experimental_accelerate_train_mode").run_config == "experimental_config.accelerate_train_mode"
    )
    assert catalogue.spec("atomic_clean_policy").run_config == "memory_config.atomic_clean_policy"


def test_ignored_and_deprecated_keys_are_marked():
    assert catalogue.spec("min_group_size").ignored
    assert catalogue.spec("enable_reduce_precision").ignored
    assert catalogue.spec("graph_memory_max_size").ignored
    assert catalogue.spec("op_select_implmode").deprecated
    assert catalogue.spec("op_select_implmode").deprecated_by == "op_precision_mode"
    assert not catalogue.spec("precision_mode").ignored


def test_seed_disagreements_are_recorded_on_the_option():
    assert "fp_point" in catalogue.spec("profiling_options").seed_note
    assert "31 GiB" in catalogue.spec("graph_memory_max_size").seed_note
    assert "False" in catalogue.spec("hcom_parallel").seed_note


@pytest.mark.parametrize("spec", catalogue.specs(), ids=lambda s: s.key)
def test_each_sample_value_passes_its_own_check(spec, sample_values):
    for value in sample_values(spec):
        assert spec.check(value) == (str(value) if spec.accepts_int else value)


@pytest.mark.parametrize(
    "key, text, expected",
    [
        ("enable_dump", "true", True),
        ("enable_dump", "No", False),
        ("enable_dump", "1", True),
        ("mix_compile_mode", "OFF", False),
        ("iterations_per_loop", "10", 10),
        ("stream_sync_timeout", "-1", -1),
        ("dump_step", "0|5|10", "0|5|10"),
        ("dump_path", '"/tmp/a b"', "/tmp/a b"),
        ("graph_memory_max_size", "17179869184", "17179869184"),
    ],
)
def test_parse_text_types_a_magic_value_by_its_field(key, text, expected):
    assert catalogue.parse_text(key, text) == expected


@pytest.mark.parametrize(
    "key, text",
    [
        ("enable_dump", "maybe"),
        ("iterations_per_loop", "ten"),
        ("iterations_per_loop", "1.5"),
        ("precision_mode", "fp17"),
    ],
)
def test_parse_text_rejects_text_that_does_not_fit_the_field(key, text):
    with pytest.raises(NpuConfigError) as info:
        catalogue.parse_text(key, text)
    assert info.value.option == key and text in str(info.value)


def test_unknown_key_suggests_close_names_and_foreign_table_reasons():
    with pytest.raises(NpuConfigError) as info:
        catalogue.spec("precison_mode")
    assert info.value.suggestions[0] == "precision_mode"
    assert catalogue.suggest("sfusion_switch_file") == ["fusion_switch_file"]
    assert catalogue.suggest("fp_point") == ["profiling_options"]
    error = catalogue.unknown_option_error("fp_point")
    assert "profiling_options" in str(error) and "JSON" in str(error)


def test_groups_list_every_option_once():
    counted = sum(len(catalogue.specs_in_group(g)) for g in catalogue.groups())
    assert counted == len(catalogue.specs()) == len(set(catalogue.keys()))
    with pytest.raises(NpuConfigError, match="dump"):
        catalogue.specs_in_group("dumps")


def test_choice_errors_name_option_value_and_allowed_values():
    with pytest.raises(NpuConfigError) as info:
        catalogue.spec("dump_mode").check("outputs")
    message = str(info.value)
    assert "dump_mode" in message and "'outputs'" in message and "'input'" in message and "'output'" in message
    assert info.value.suggestions == ["output"]


BAD_GRAMMAR = {
    "dump_step": "0|5-3",
    "profiling_options": "{output}",
    "in_out_pair": "[['a']]",
    "input_shape": "data",
    "dynamic_dims": "1;x",
    "dynamic_inputs_shape_range": "inputs:[1]",
    "local_device_list": "a,b",
    "accelerate_train_mode": "fast",
    "stream_max_parallel_num": "AIcoreEngine",
    "auto_tune_mode": "XX",
    "byte_size": "12GB",
}
WRONG_TYPE = {"b": "true", "i": 1.5, "s": 3.5}


@pytest.mark.parametrize("spec", catalogue.specs(), ids=lambda s: s.key)
def test_each_option_rejects_wrong_types_and_values_outside_what_it_documents(spec):
    bad = [WRONG_TYPE[spec.field]]
    if spec.choices is not None:
        bad.append("no-such-choice" if spec.field == "s" else 99)
    if spec.range is not None:
        low, high = spec.range
        bad.append(str(low - 1) if spec.field == "s" else low - 1)
        if high is not None:
            bad.append(str(high + 1) if spec.field == "s" else high + 1)
    if spec.validator:
        bad.append(BAD_GRAMMAR[spec.validator])
    for value in bad:
        with pytest.raises(NpuConfigError) as info:
            spec.check(value)
        assert spec.key in str(info.value) and repr(value) in str(info.value)


def test_values_npuestimator_writes_unasked_are_valid_for_their_option():
    written = [s for s in catalogue.specs() if s.estimator_writes is not None]
    assert len(written) >= 40
    for spec in written:
        value, when = spec.estimator_writes
        assert spec.check(value) == value, spec.key
        assert "estimator" in spec.api or spec.key in ("use_off_line", "job", "task_index", "min_group_size"), spec.key
        assert when in (None, "dump_config", "profiling_config", "memory_config", "aoe_mode"), spec.key


def test_parse_text_reports_an_out_of_range_int_as_out_of_range_not_as_a_non_int():
    with pytest.raises(NpuConfigError) as info:
        catalogue.parse_text("iterations_per_loop", "0")
    assert "out of range" in str(info.value)
    assert "is not an int" not in str(info.value)
