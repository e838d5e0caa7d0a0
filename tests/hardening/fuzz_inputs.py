"""Shared pieces of the hardening tests: the count of generated inputs and value strategies.

Not a test module (pytest collects only ``test_*.py``); the hardening conftest puts this folder on
``sys.path`` so the test modules import it by name.

Why a counter rather than trusting ``max_examples``: hypothesis may stop early when a strategy's space
is small, and the issue asks for the number of inputs actually tried per run.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

TRIED: Counter[str] = Counter()
ACCEPTED: Counter[str] = Counter()  # how many of them were valid, to show the fuzzers reach both sides


def tried(area: str, n: int = 1) -> None:
    """Count ``n`` generated inputs of ``area`` as tried (printed at the end of the run)."""
    TRIED[area] += n


def accepted(area: str) -> None:
    """Count one input of ``area`` that the product accepted."""
    ACCEPTED[area] += 1


def fuzz_settings(max_examples: int) -> settings:
    """Hypothesis settings for CI: fixed budget, no deadline (2 shared cores), no example database.

    ``derandomize`` keeps a CI run reproducible: a failure seen once is seen on every rerun.
    """
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.function_scoped_fixture,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )


# --------------------------------------------------------------------------------------- strings

# Characters that break parsers, terminals, HTML and C strings.
NASTY_CHARS = [
    "\x00",
    "\n",
    "\r",
    "\t",
    "\x1b",
    "\x7f",
    " ",
    '"',
    "'",
    "\\",
    "|",
    "-",
    ",",
    ";",
    ":",
    "=",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    "&",
    "/",
    "~",
    "#",
    "$",
    "`",
    "\u202e",
    "\u200f",
    "\ufeff",
    "\u00a0",
    "\u2028",
    "²",
    "٣",
    "１",
    "\U0001f600",
    "é",
    "ß",
    "\ud800",
    "\udfff",
]

nasty_text = st.text(
    alphabet=st.one_of(st.sampled_from(NASTY_CHARS), st.characters(codec="utf-8"), st.characters(max_codepoint=127)),
    max_size=40,
)
any_text = st.one_of(nasty_text, st.text(max_size=20), st.sampled_from(["", " ", "0", "-1", "true", "None", "nan"]))

huge_ints = st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**30, -(10**30), 2**31, 2**31 - 1, -1, 0])
any_int = st.one_of(st.integers(min_value=-1000, max_value=1000), st.integers(), huge_ints)

wrong_type_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(), max_size=3),
    st.tuples(st.integers()),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.binary(max_size=10),
    st.just(object()),
    st.just(1j),
    st.sets(st.integers(), max_size=2),
)


def text_of(spec: Any) -> st.SearchStrategy[str]:
    """Strings an option might plausibly get: its choices (and near misses) plus grammar pieces."""
    pieces: list[st.SearchStrategy[str]] = [any_text]
    if spec.choices is not None:
        choices = [str(c) for c in spec.choices]
        pieces.append(st.sampled_from(choices))
        pieces.append(st.sampled_from(choices).map(str.upper))
        pieces.append(st.sampled_from(choices).map(lambda c: f" {c}"))
    if spec.validator in GRAMMARS:
        pieces.append(GRAMMARS[spec.validator])
    if spec.range is not None:
        pieces.append(any_int.map(str))
    return st.one_of(*pieces)


def values_for(spec: Any) -> st.SearchStrategy[Any]:
    """Values of the right type (in and out of range), wrong types, bytes and unset for one option."""
    right: st.SearchStrategy[Any]
    if spec.field == "b":
        right = st.booleans()
    elif spec.field == "i":
        edges = []
        if spec.range is not None:
            low, high = spec.range
            edges = [v for b in (low, high) if b is not None for v in (b - 1, b, b + 1)]
        if spec.choices is not None:
            edges += [*list(spec.choices), max(spec.choices) + 1, min(spec.choices) - 1]
        right = st.one_of(any_int, st.sampled_from(edges)) if edges else any_int
    else:
        right = text_of(spec)
        if spec.accepts_int:
            right = st.one_of(right, any_int)
    return st.one_of(
        right,
        right,  # weight the right type twice: most bugs hide behind a value that passes the type check
        wrong_type_values,
        st.booleans(),
        any_int,
        text_of(spec).map(lambda s: s.encode("utf-8")),
        st.binary(max_size=8),
        st.none(),
    )


# --------------------------------------------------------------------------------------- grammars

_step = st.integers(min_value=0, max_value=120).map(str)
_range = st.tuples(st.integers(0, 60), st.integers(0, 60)).map(lambda ab: f"{ab[0]}-{ab[1]}")
_junk = st.sampled_from(["", " ", "x", "-", "--", "1-", "-1", "0x1", "²", "٣", "1\n", "\n", "1_0", "+3", "1.5"])
_dump_step_item = st.one_of(_step, _step, _range, _junk)
dump_step_text = st.lists(_dump_step_item, min_size=1, max_size=6).map("|".join)

_node = st.one_of(
    st.sampled_from(["x", "mm", "y", "total", "import/conv2d_1/convolution", "a b", ""]),
    st.text(alphabet="ab/_.\"' ,[]\t", max_size=6),
)
_node_list = st.lists(_node, max_size=3).map(lambda ns: "[" + ", ".join(f"'{n}'" for n in ns) + "]")
_pair = st.tuples(_node_list, _node_list).map(lambda p: f"[{p[0]}, {p[1]}]")
in_out_pair_text = st.one_of(
    st.lists(_pair, max_size=3).map(lambda ps: "[" + ", ".join(ps) + "]"),
    st.text(alphabet="[]',ab \t\"", max_size=24),
)

_dim = st.one_of(st.integers(-2, 64).map(str), _junk)
_shape_item = st.tuples(
    st.sampled_from(["data", "label", "x", "a:b", "", "名"]), st.lists(_dim, min_size=0, max_size=4)
).map(lambda t: f"{t[0]}:{','.join(t[1])}")
input_shape_text = st.lists(_shape_item, min_size=1, max_size=3).map(";".join)
dynamic_dims_text = st.lists(st.lists(_dim, min_size=1, max_size=4).map(",".join), min_size=1, max_size=4).map(";".join)

_prof_key = st.sampled_from(
    [
        "output",
        "task_trace",
        "training_trace",
        "aicpu",
        "fp_point",
        "bp_point",
        "aic_metrics",
        "storage_limit",
        "hccl",
        "msproftx",
        "l2",
        "task_time",
        "outptu",
        "",
        "<x>",
    ]
)
_prof_value = st.one_of(
    st.sampled_from(["on", "off", "/tmp/p", "PipeUtilization", "ArithmeticUtilization", "200MB", "", "ON", "l2_cache"]),
    st.integers(-5, 10**6),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    any_text,
)
_valid_profiling = st.fixed_dictionaries(
    {"output": st.sampled_from(["/tmp/prof", "./p", "/tmp/<x>"])},
    optional={
        "task_trace": st.sampled_from(["on", "off"]),
        "training_trace": st.sampled_from(["on", "off"]),
        "aicpu": st.sampled_from(["on", "off"]),
        "fp_point": st.sampled_from(["mm", "", "x"]),
        "bp_point": st.sampled_from(["total", ""]),
        "aic_metrics": st.sampled_from(["PipeUtilization"]),
    },
).map(lambda d: __import__("json").dumps(d))
profiling_json = st.one_of(
    _valid_profiling,
    st.dictionaries(_prof_key, _prof_value, max_size=4).map(lambda d: __import__("json").dumps(d)),
    st.sampled_from(["", "{", "[]", "null", "1", '"x"', '{"output": "/tmp"', "{'output': '/tmp'}"]),
    any_text,
)

GRAMMARS: dict[str, st.SearchStrategy[str]] = {
    "dump_step": dump_step_text,
    "in_out_pair": in_out_pair_text,
    "input_shape": input_shape_text,
    "dynamic_dims": dynamic_dims_text,
    "profiling_options": profiling_json,
}
