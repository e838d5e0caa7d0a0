"""Grammars of the string options whose value is a small language (dump_step, in_out_pair, ...).

Each checker takes the option's text and returns ``None`` when the adapter would accept it, or one sentence saying what
is wrong and showing a correct example. The rules follow today's adapter (tests/data/reference/ADAPTER-FACTS.md §1.2,
§2.1, §3.4); where the adapter is lax in a way that cannot be what the user meant, the checker says so in its docstring.
Parsers the planner needs (``parse_in_out_pair``, ``parse_input_shape``, ``parse_dynamic_dims``) live here too, so there
is one reading of each grammar.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, cast

from npu_jupyter._options.profiling import ProfilingOptionsError, profiling_fields

# Matched with ``fullmatch``, never ``^...$``: ``$`` also matches before a trailing newline, which
# would let '5\n' through here while the adapter (and the runtime) refuse it. ASCII [0-9] on purpose:
# str.isdigit() accepts '²' or '٣', which the adapter's decimal parse cannot read.
_DIGITS = re.compile(r"[0-9]*")
_INT = re.compile(r"-?[0-9]+")
_NONNEG_LIST = re.compile(r"[0-9]+(,[0-9]+)*")
_ENGINE_ITEM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*:[0-9]+")
_SHAPE_RANGE_DIM = re.compile(r"-1|[0-9]+|[0-9]+~[0-9]+")
_BYTES = re.compile(r"[0-9]+")


def check_dump_step(text: str) -> str | None:
    """The adapter's checkDumpStep: '|'-separated steps or 'a-b' ranges (a < b), at most 100 items.

    An empty item ('0||5') passes in the adapter (its digit test accepts an empty string), so it
    passes here too; ``warnings()`` points it out.
    """
    if text == "":
        return None
    items = text.split("|")
    if len(items) > 100:
        return f"dump_step has {len(items)} items; the adapter supports at most 100 sets of steps"
    for item in items:
        parts = item.split("-")
        if len(parts) == 1 and _DIGITS.fullmatch(parts[0]):
            continue
        if len(parts) == 2 and parts[0] and parts[1] and _DIGITS.fullmatch(parts[0]) and _DIGITS.fullmatch(parts[1]):
            if int(parts[0]) >= int(parts[1]):
                return (
                    f"in range {item!r} the first step is >= the second; "
                    "a range must rise, correct example: '0|5|10-20'"
                )
            continue
        return f"item {item!r} is not a step or a step range; correct example: '0|5|10|50-100'"
    return None


def parse_dump_step(text: str | None) -> list[tuple[int, int]] | None:
    """``"0|3-5|10"`` -> [(0, 0), (3, 5), (10, 10)]; None or "" means every step.

    The one reading of the grammar :func:`check_dump_step` accepts (the runtime selects dump steps
    with it), so what the config accepts is exactly what the emulator dumps. Empty items, which the
    adapter lets through, select nothing. ValueError with the checker's sentence if malformed.
    """
    if text is None or text == "":
        return None
    problem = check_dump_step(text)
    if problem:
        raise ValueError(problem)
    ranges: list[tuple[int, int]] = []
    for item in text.split("|"):
        if item:
            low, _, high = item.partition("-")
            ranges.append((int(low), int(high or low)))
    return ranges


def parse_in_out_pair(text: str) -> list[tuple[list[str], list[str]]]:
    """Read in_out_pair the way the adapter's character walk does.

    '[' raises the depth; at depth 3 characters form node names (',' or ']' ends one); ']' at depth 2
    closes a pair, which counts only with two lists; spaces, tabs and quotes are dropped.
    """
    pairs: list[tuple[list[str], list[str]]] = []
    depth, name, names, lists = 0, "", [], []
    for ch in text:
        if ch in " \t'\"":
            continue
        if ch == "[":
            depth += 1
        elif ch in ",]":
            if depth == 3:
                if name:
                    names.append(name)
                name = ""
                if ch == "]":
                    lists.append(names)
                    names = []
            elif depth == 2 and ch == "]":
                if len(lists) >= 2:
                    pairs.append((lists[0], lists[1]))
                lists = []
            if ch == "]":
                depth -= 1
        elif depth == 3:
            name += ch
    return pairs


def check_in_out_pair(text: str) -> str | None:
    """Valid when the walk finds at least one pair and the brackets balance (unbalanced text is a typo)."""
    if text.count("[") != text.count("]"):
        return "in_out_pair has unbalanced brackets; example: \"[[['in_node'], ['out_a', 'out_b']]]\""
    if not parse_in_out_pair(text):
        return (
            "in_out_pair holds no [[inputs], [outputs]] pair; it is str() of a list of pairs, "
            "e.g. \"[[['import/conv2d_1/convolution'], ['import/conv2d_59/BiasAdd']]]\""
        )
    return None


def parse_input_shape(text: str) -> list[tuple[str, list[int]]]:
    """'data:1,1,40,-1;label:1,-1' -> [('data', [1, 1, 40, -1]), ('label', [1, -1])]; ValueError if malformed."""
    result = []
    for item in text.split(";"):
        name, sep, dims = item.rpartition(":")
        if not sep or not name or not dims:
            raise ValueError(item)
        values = dims.split(",")
        if not all(_INT.fullmatch(v) for v in values):
            raise ValueError(item)
        result.append((name, [int(v) for v in values]))
    return result


def check_input_shape(text: str) -> str | None:
    """';'-separated 'name:d1,d2,...' with integer dims (-1 marks a geared dimension; 0 for a scalar)."""
    if text == "":
        return "input_shape is empty; example: 'data:1,1,40,-1;label:1,-1'"
    try:
        parse_input_shape(text)
    except ValueError as exc:
        return f"input_shape item {exc.args[0]!r} is not 'name:d1,d2,...'; example: 'data:1,1,40,-1;label:1,-1'"
    return None


def parse_dynamic_dims(text: str) -> list[list[int]]:
    """'20,20;40,40' -> [[20, 20], [40, 40]]; ValueError if malformed."""
    gears = []
    for gear in text.split(";"):
        if not _NONNEG_LIST.fullmatch(gear):
            raise ValueError(gear)
        gears.append([int(v) for v in gear.split(",")])
    return gears


def check_dynamic_dims(text: str) -> str | None:
    """';'-separated gears of comma-separated non-negative ints."""
    try:
        parse_dynamic_dims(text)
    except ValueError as exc:
        return (
            f"dynamic_dims gear {exc.args[0]!r} is not a comma-separated list of non-negative ints; "
            "example: '20,20,1,1;40,40,2,2'"
        )
    return None


def check_dynamic_inputs_shape_range(text: str) -> str | None:
    """'getnext:[..],[..];data:[..]': at most the two styles, each once; dims are n, -1 or a~b; '[]' is a scalar."""
    example = "example: 'data:[1,2];getnext:[2,3]'"
    items = [item for item in text.split(";") if item.strip()]
    if not items:
        return None
    if len(items) > 2:
        return f"dynamic_inputs_shape_range has more than 2 input styles; {example}"
    seen = set()
    for item in items:
        style, sep, shapes = item.strip().partition(":")
        if not sep or style not in ("data", "getnext") or style in seen:
            return (
                f"dynamic_inputs_shape_range item {item!r} must start with 'data:' or 'getnext:' (once each); {example}"
            )
        seen.add(style)
        shapes = shapes.replace(" ", "")
        if not re.fullmatch(r"\[[^\[\]]*\](,\[[^\[\]]*\])*", shapes):
            return f"dynamic_inputs_shape_range item {item!r} is not a list of [dims]; {example}"
        for shape in re.findall(r"\[([^\[\]]*)\]", shapes):
            dims = list(shape.split(",")) if shape else []
            bad = [d for d in dims if not _SHAPE_RANGE_DIM.fullmatch(d)]
            if bad:
                return f"dynamic_inputs_shape_range dim {bad[0]!r} must be n, -1 or a~b; {example}"
    return None


def check_local_device_list(text: str) -> str | None:
    """Comma-separated non-negative ints, the adapter's regex."""
    if not _NONNEG_LIST.fullmatch(text):
        return "local_device_list must be comma-separated device ids, example: '1,2,3'"
    return None


def check_accelerate_train_mode(text: str) -> str | None:
    """'fast|step|0.9' or 'fast1|loss|1.05': type fast/fast1, trigger step (0.2-0.9) or loss (1.01-1.5)."""
    parts = text.split("|")
    example = "examples: 'fast|step|0.9', 'fast1|loss|1.05'"
    if len(parts) != 3:
        return f"experimental_accelerate_train_mode needs three '|'-separated fields; {example}"
    kind, trigger, ratio = parts
    if kind not in ("fast", "fast1"):
        return f"the first field {kind!r} must be fast or fast1; {example}"
    bounds = {"step": (0.2, 0.9), "loss": (1.01, 1.5)}.get(trigger)
    if bounds is None:
        return f"the second field {trigger!r} must be step or loss; {example}"
    try:
        value = float(ratio)
    except ValueError:
        return f"the third field {ratio!r} must be a number; {example}"
    if not bounds[0] <= value <= bounds[1]:
        return f"with {trigger} the third field must lie in [{bounds[0]}, {bounds[1]}], got {ratio}"
    return None


def check_stream_max_parallel_num(text: str) -> str | None:
    """'ENGINE:n[,ENGINE:n]' with n >= 1."""
    items = text.split(",") if text else []
    for item in items:
        if not _ENGINE_ITEM.fullmatch(item.strip()) or int(item.split(":")[1]) < 1:
            return f"stream_max_parallel_num item {item!r} must be ENGINE:n (n >= 1); example: 'DNN_VM_AICPU:10,AIcoreEngine:1'"
    return None


def check_auto_tune_mode(text: str) -> str | None:
    """RL, GA or both ('RL,GA' as the docs write it, 'GA|RL' as the old adapter did)."""
    items = [t.strip() for t in re.split(r"[,|]", text)]
    if not items or any(t not in ("RL", "GA") for t in items):
        return "auto_tune_mode must be RL, GA or 'RL,GA'"
    return None


def check_byte_size(text: str) -> str | None:
    """A decimal byte count (the proto carries it as a string; ints are accepted and converted)."""
    if not _BYTES.fullmatch(text):
        return f"{text!r} is not a whole number of bytes (ASCII digits 0-9 only)"
    return None


def check_profiling_options(text: str, keys: Mapping[str, Mapping[str, Any]] | None = None) -> str | None:
    """A JSON object whose keys are the PROFILING_OPTIONS switches ([P]); values checked where enumerated.

    The adapter passes the string through untouched; GE (or the emulator) reads it, so a typo here
    silently loses the profile — worth a hard error at assignment.
    """
    try:
        data = profiling_fields(text)
    except ProfilingOptionsError as exc:
        if exc.json_msg is not None:
            return (
                f"profiling_options is not valid JSON ({exc.json_msg}); it is a JSON object such as "
                '\'{"output":"/tmp/profiling","task_trace":"on"}\''
            )
        return 'profiling_options must be a JSON object, e.g. \'{"output":"/tmp/profiling","task_trace":"on"}\''
    if keys is None:
        from npu_jupyter._options.catalogue import profiling_option_keys

        keys = profiling_option_keys()
    for name, value in data.items():
        problem = _check_profiling_entry(name, value, keys)
        if problem:
            return problem
    return None


def _check_profiling_entry(name: str, value: object, keys: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One key/value of the profiling JSON."""
    import difflib

    rule = keys.get(name)
    if rule is None:
        close = difflib.get_close_matches(name, list(keys), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return f"profiling_options has unknown field {name!r}{hint}; known fields: {', '.join(keys)}"
    if "range" in rule:
        low, high = rule["range"]
        try:
            number = int(cast("str", value))  # any JSON value; int() refuses the wrong ones
        except (TypeError, ValueError):
            return f"profiling_options field {name!r} must be an integer in [{low}, {high}], got {value!r}"
        if not low <= number <= high:
            return f"profiling_options field {name!r} must be in [{low}, {high}], got {value!r}"
        return None
    if not isinstance(value, str):
        return f"profiling_options field {name!r} must be a string, got {value!r}"
    if "values" in rule and value not in rule["values"]:
        if rule.get("prefix") and value.startswith(rule["prefix"]):
            return None
        allowed = ", ".join(rule["values"]) + (f", {rule['prefix']}..." if rule.get("prefix") else "")
        return f"profiling_options field {name!r} is {value!r}; allowed: {allowed}"
    if "items" in rule:
        bad = [v for v in value.split(",") if v not in rule["items"]]
        if bad:
            return f"profiling_options field {name!r} has {bad[0]!r}; allowed items: {', '.join(rule['items'])}"
    if "pattern" in rule and not re.match(rule["pattern"], value):
        return f"profiling_options field {name!r} is {value!r}; expected {rule['doc']}"
    return None


CHECKERS: dict[str, Callable[[str], str | None]] = {
    "dump_step": check_dump_step,
    "profiling_options": check_profiling_options,
    "in_out_pair": check_in_out_pair,
    "input_shape": check_input_shape,
    "dynamic_dims": check_dynamic_dims,
    "dynamic_inputs_shape_range": check_dynamic_inputs_shape_range,
    "local_device_list": check_local_device_list,
    "accelerate_train_mode": check_accelerate_train_mode,
    "stream_max_parallel_num": check_stream_max_parallel_num,
    "auto_tune_mode": check_auto_tune_mode,
    "byte_size": check_byte_size,
}
