"""Fuzzing ``%npu`` lines and ``%%npu`` flag strings in a real IPython shell (docs/contract.md, Notebook).

Lines are built from a grammar of valid pieces (subcommands, KEY=VALUE with real keys and values,
flags) mixed with garbage (shlex-breaking quotes, unknown flags, ``=`` without a key, unicode, NUL).
Invariants for every line:
- the only exceptions are IPython's ``UsageError`` or ``NpuConfigError``, with a message naming the
  offending input;
- a rejected line changes nothing (the shared config equals its snapshot) and a rejected ``%%npu``
  line does not run the cell;
- an accepted ``%npu set`` leaves only values the option's own setter accepts; an accepted ``%%npu``
  line runs the cell once and leaves the session config as it was.
"""

from __future__ import annotations

import shlex

import pytest
from config_invariants import assert_round_trips
from fuzz_inputs import accepted, any_int, fuzz_settings, nasty_text, text_of, tried
from hypothesis import assume, example, given
from hypothesis import strategies as st
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from npu_jupyter._notebook.state import current_config
from npu_jupyter._options import catalogue
from npu_jupyter._options.errors import NpuConfigError

SPECS = catalogue.specs()
_garbage = st.one_of(
    st.sampled_from(
        [
            '"',
            "'",
            '"unclosed',
            "'x",
            "=",
            "=1",
            "==",
            "--",
            "-",
            "--bogus",
            "--precison",
            "\\",
            "\x00",
            "é",
            "\u202e",
            "set=",
            "precision_mode",
            "precision_mode=",
            "KEY=VALUE",
            "  ",
            "\t",
            ";",
            "&&",
        ]
    ),
    nasty_text,
)


def _quoted(text: str) -> str:
    return shlex.quote(text) if text else "''"


@st.composite
def assignment(draw) -> str:
    """KEY=VALUE with a real key and a plausible value, or a broken variant."""
    spec = draw(st.sampled_from(SPECS))
    if spec.field == "b":
        value = draw(st.sampled_from(["true", "false", "1", "0", "yes", "no", "on", "off", "TRUE", "maybe", ""]))
    elif spec.field == "i":
        value = draw(st.one_of(any_int.map(str), st.sampled_from(["", "x", "1.5", "0x10", " 3"])))
    else:
        value = draw(text_of(spec))
    key = draw(
        st.one_of(st.just(spec.key), st.just(spec.key), st.just(spec.key.upper()), st.just(""), st.just(spec.key + "x"))
    )
    style = draw(st.sampled_from(["quoted", "quoted", "raw", "double"]))
    if style == "quoted":
        return _quoted(f"{key}={value}")
    if style == "double":
        return f'{key}="{value}"'
    return f"{key}={value}"


_GOOD_TEXT = {
    "dump_step": ["0|5|10", "0|3-5|10", "7"],
    "in_out_pair": ["[[['x'], ['y']]]"],
    "input_shape": ["data:1,-1"],
    "dynamic_dims": ["1;2"],
    "profiling_options": ['{"output":"/tmp/p"}'],
    "local_device_list": ["0,1"],
    "accelerate_train_mode": ["fast|step|0.9"],
    "stream_max_parallel_num": ["AIcoreEngine:1"],
    "auto_tune_mode": ["RL,GA"],
    "byte_size": ["1024"],
    "dynamic_inputs_shape_range": ["data:[1,2]"],
}


@st.composite
def good_assignment(draw) -> str:
    """KEY=VALUE that the option's setter accepts (so accepted lines are common, not a fluke)."""
    spec = draw(st.sampled_from(SPECS))
    if spec.field == "b":
        value = draw(st.sampled_from(["true", "false", "1", "0", "yes", "off"]))
    elif spec.choices is not None:
        value = str(draw(st.sampled_from(spec.choices)))
    elif spec.field == "i":
        low, high = spec.range or (0, None)
        low = low or 0
        value = str(draw(st.integers(low, low + 100 if high is None else min(high, low + 100))))
    elif spec.validator:
        value = draw(st.sampled_from(_GOOD_TEXT[spec.validator]))
    else:
        value = draw(st.one_of(st.sampled_from(["/tmp/a b", "x", "é/ü", "<b>&"]), nasty_text.filter(str.isprintable)))
    return _quoted(f"{spec.key}={value}")


good_line = st.one_of(
    st.lists(good_assignment(), min_size=1, max_size=3).map(lambda a: "set " + " ".join(a)),
    st.lists(st.sampled_from(SPECS).map(lambda s: s.key), min_size=1, max_size=3).map(lambda k: "unset " + " ".join(k)),
)
piece = st.one_of(assignment(), assignment(), _garbage, st.sampled_from(SPECS).map(lambda s: s.key))
subcommand = st.sampled_from(
    [
        "",
        "show",
        "set",
        "set",
        "set",
        "unset",
        "unset",
        "reset",
        "code",
        "code --estimator",
        "help",
        "help options",
        "help set",
        "help sett",
        "set --help",
        "unset -h",
        "code --est",
        "save a b",
        "adapter bogus",
        "explain",
        "sett",
        "SET",
        "panel x",
        "save",
        "load",
    ]
)
npu_lines = st.one_of(
    good_line, st.tuples(subcommand, st.lists(piece, max_size=4)).map(lambda t: " ".join([t[0], *t[1]]).strip())
)

base_configs = st.sampled_from(
    [
        {},
        {"precision_mode": "force_fp16", "mix_compile_mode": True},
        {"enable_dump": True, "dump_path": "/tmp", "dump_step": "0|5"},
    ]
)


def _names_input(message: str, line: str) -> bool:
    """The message quotes the line, one of its tokens, or a key/value from it.

    The magics get the line after IPython's ``$name`` expansion (``$0`` arrives as ``0``), so the
    callers also accept a message naming the expanded line.
    """
    if not message.strip():
        return False
    try:
        tokens = shlex.split(line)
    except ValueError:
        return repr(line) in message or line in message
    pieces = set()
    for token in tokens or [line]:
        pieces |= {token, repr(token)}
        key, sep, value = token.partition("=")
        if sep:
            pieces |= {key.strip(), repr(value), repr(key)}
    return any(p and p in message for p in pieces)


def _writes_outside_cwd(line: str) -> bool:
    """``%npu save PATH`` writes PATH: keep generated saves inside the test's working folder."""
    try:
        tokens = shlex.split(line)
    except ValueError:
        return False
    return (
        bool(tokens)
        and tokens[0] == "save"
        and any(t.startswith(("/", "~")) or ".." in t or "\x00" in t for t in tokens[1:])
    )


@pytest.mark.slow
@fuzz_settings(1500)
@given(line=npu_lines, base=base_configs)
def test_any_npu_line_either_applies_whole_or_fails_with_a_named_usage_error(ip, tmp_path, monkeypatch, line, base):
    assume(not _writes_outside_cwd(line))
    monkeypatch.chdir(tmp_path)  # generated `%npu save x` lines write here, not into the repository
    tried("%npu lines")
    config = current_config()
    config.reset(base)
    before = config.changed()
    try:
        with capture_output():
            ip.run_line_magic("npu", line)
    except (UsageError, NpuConfigError) as err:
        assert config.changed() == before, line
        assert _names_input(str(err), line) or _names_input(str(err), ip.var_expand(line)), (line, str(err))
        return
    accepted("%npu lines")
    for key, value in config.changed().items():
        assert catalogue.spec(key).check(value) == value  # nothing a setter would refuse got in
    assert_round_trips(config)
    words = line.split()
    if not words or words[0] in ("show", "code", "help", "explain"):
        assert config.changed() == before


flag = st.one_of(
    st.sampled_from(["--mix", "--no-mix", "--quiet", "--profile"]),
    st.sampled_from(
        catalogue.spec("precision_mode").choices + catalogue.spec("precision_mode_v2").choices + ("fp32",)
    ).map(lambda m: f"--precision {m}"),
    st.sampled_from(["DUMPDIR", "/nonexistent/dir", "FILE", "''", "DUMPDIR/sub"]).map(lambda d: f"--dump {d}"),
    st.one_of(st.sampled_from(["0|5", "'0|3-5|10'", "5-3", "x", "''"]), nasty_text.map(_quoted)).map(
        lambda s: f"--dump-step {s}"
    ),
    st.sampled_from(["input", "output", "all", "both", "''"]).map(lambda m: f"--dump-mode {m}"),
    st.sampled_from(["DUMPDIR", "FILE/sub", "'a b'"]).map(lambda d: f"--profile {d}"),
    st.lists(assignment(), min_size=1, max_size=2).map(lambda a: "--set " + " ".join(a)),
    _garbage,
)
cell_lines = st.lists(flag, max_size=4).map(" ".join)


@pytest.mark.slow
@fuzz_settings(800)
@given(flags=cell_lines, base=base_configs)
@example(flags="$0", base={})  # found by the legacy leg's Hypothesis: IPython expands `$0` to `0`
def test_any_cell_flag_string_runs_the_cell_once_or_not_at_all(ip, tmp_path_factory, monkeypatch, flags, base):
    tried("%%npu flag strings")
    folder = tmp_path_factory.mktemp("cell")
    monkeypatch.chdir(folder)  # `--profile on`, `--profile 'a b'`: the folders these name are made here
    (folder / "file").write_text("not a directory")
    line = flags.replace("DUMPDIR", str(folder)).replace("FILE", str(folder / "file"))
    config = current_config()
    config.reset(base)
    before = config.changed()
    ip.user_ns["x"] = "not run"
    try:
        with capture_output():
            ip.run_cell_magic("npu", line, "x = 1")
    except (UsageError, NpuConfigError) as err:
        assert ip.user_ns["x"] == "not run", line
        assert config.changed() == before, line
        assert _names_input(str(err), line) or _names_input(str(err), ip.var_expand(line)), (line, str(err))
        return
    accepted("%%npu flag strings")
    assert ip.user_ns["x"] == 1, line
    assert config.changed() == before, line


_option_values = st.one_of(
    st.booleans(),
    any_int,
    nasty_text,
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.sampled_from(["force_fp16", "allow_mix_precision", "0|5", "/tmp", "1024"]),
)
_documents = st.one_of(
    st.dictionaries(st.sampled_from([s.key for s in SPECS]), _option_values, max_size=4),
    st.dictionaries(st.sampled_from([s.key for s in SPECS]), _option_values, max_size=3).map(
        lambda d: {"format": "npu_jupyter.NpuConfig", "version": 1, "options": d}
    ),
    st.dictionaries(nasty_text, _option_values, max_size=2),
    st.sampled_from([[], None, 3, "x", {"format": "npu_jupyter.NpuConfig", "version": 99, "options": {}}]),
)
_file_texts = st.one_of(
    _documents.map(lambda d: __import__("json").dumps(d)),
    nasty_text,
    st.sampled_from(["", "{", '{"precision_mode": ', "\ufeff{}"]),
)


@fuzz_settings(400)
@given(text=_file_texts, base=base_configs)
def test_npu_load_of_any_file_replaces_the_config_whole_or_changes_nothing(ip, tmp_path, text, base):
    tried("%npu load files")
    path = tmp_path / "config.json"
    # valid UTF-8 only: a non-UTF-8 file is reported in test_known_bugs.py (test_npu_load_of_a_non_utf8_file_...)
    path.write_text(text, encoding="utf-8", errors="replace")
    config = current_config()
    config.reset(base)
    before = config.changed()
    try:
        with capture_output():
            ip.run_line_magic("npu", f"load {shlex.quote(str(path))}")
    except UsageError as err:
        assert str(path) in str(err)
        assert config.changed() == before
        return
    accepted("%npu load files")
    import json

    document = json.loads(text)
    options = document["options"] if "format" in document else document
    assert config.changed() == {k: catalogue.spec(k).check(v) for k, v in options.items() if v is not None}
