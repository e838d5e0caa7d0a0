"""Turn the text of ``%npu`` / ``%%npu`` lines into typed option values, or one clear UsageError.

Values are typed by the option catalogue (``catalogue.parse_text``), the same table the config and the
panel read: a ``.b`` option takes true/false/1/0/yes/no/on/off, a ``.i`` option an integer, a ``.s``
option any string (shell-style quotes keep spaces). Every token of a line is checked before anything is
applied and all problems are reported together, so a line is either applied whole or not at all.
"""

from __future__ import annotations

import argparse
import difflib
import shlex
import textwrap

from IPython.core.error import UsageError


def split(line: str, usage: str) -> list[str]:
    """Shell-style split; an unclosed quote is a usage error, not a traceback."""
    try:
        return shlex.split(line)
    except ValueError as err:
        raise UsageError(f"cannot read {line!r}: {err}.\n{usage}") from None


def one_line_usage(parser: argparse.ArgumentParser) -> str:
    """``%npu save PATH``: a parser's usage without its prefix (argparse's ``usage:``, IPython's ``::``).

    Joined onto one line, so a narrow terminal (argparse wraps at ``COLUMNS``) does not change it.
    """
    return " ".join(parser.format_usage().split()[1:])


def parse_assignments(tokens: list[str], usage: str, outcome: str = "nothing was changed") -> dict[str, object]:
    """``["precision_mode=force_fp16", "mix_compile_mode=1"]`` -> typed mapping; all problems at once."""
    from npu_jupyter._options import catalogue
    from npu_jupyter._options.errors import NpuConfigError

    values: dict[str, object] = {}
    problems: list[str] = []
    for token in tokens:
        key, sep, text = token.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"{token!r} is not KEY=VALUE")
            continue
        try:
            value = catalogue.parse_text(key, text)
        except NpuConfigError as err:
            problems.append(allowed_on_own_lines(err) + _json_quote_hint(key, text))
            continue
        if key in values and values[key] != value:
            problems.append(f"{key} is given twice ({values[key]!r} and {value!r})")
        values[key] = value
    if problems:
        raise UsageError(problem_text(problems, usage, outcome))
    return values


def _json_quote_hint(key: str, text: str) -> str:
    """Why a JSON value typed bare fails: the shell-style split ate its double quotes."""
    if text.lstrip().startswith("{") and '"' not in text:
        return (
            f" (the line is split shell-style, which removes double quotes: wrap the JSON in single "
            f'quotes, e.g. %npu set {key}=\'{{"output":"/tmp/profiling","task_trace":"on"}}\')'
        )
    return ""


def check_keys(tokens: list[str], usage: str) -> list[str]:
    """Option names for ``unset``; unknown ones (with suggestions) reject the whole line."""
    from npu_jupyter._options import catalogue
    from npu_jupyter._options.errors import NpuConfigError

    problems = []
    for key in tokens:
        try:
            catalogue.spec(key)
        except NpuConfigError as err:
            problems.append(allowed_on_own_lines(err))
    if problems:
        raise UsageError(problem_text(problems, usage))
    return tokens


def suggest(word: str, choices: list[str]) -> str:
    """`` (did you mean X?)`` or ``""``: the fuzzy hint used for subcommands, flags and op names."""
    close = difflib.get_close_matches(word, choices, n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def problem_text(problems: list[str], usage: str, outcome: str = "nothing was changed") -> str:
    """One message for every problem of a line, ending with what is allowed.

    A problem that carries its own block of allowed values (several lines) gets the outcome on a line
    of its own, so the values are not followed by "; nothing was changed" mid-list.
    """
    if len(problems) == 1:
        problem = problems[0]
        head = f"{problem}\n{outcome[:1].upper()}{outcome[1:]}." if "\n" in problem else f"{problem}; {outcome}."
    else:
        items = ("  - " + p.replace("\n", "\n    ") for p in problems)
        head = f"{len(problems)} problems, {outcome}:\n" + "\n".join(items)
    return f"{head}\n{usage}"


WRAP_WIDTH = 88


def wrap_values(values: list[str], indent: str = "    ") -> str:
    """Allowed values as indented lines broken only between values (never inside one).

    Notebook frontends soft-wrap a long error line at any character, which split
    ``'must_keep_origin_dtype'`` mid-word; lines already shorter than the output area are not re-wrapped.
    """
    return textwrap.fill(
        ", ".join(values),
        width=WRAP_WIDTH,
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def allowed_on_own_lines(err: Exception) -> str:
    """The error's text with a long ``one of 'a', 'b', ...`` list moved onto wrapped lines of its own.

    Uses the error's ``allowed`` attribute (NpuConfigError) to find the list; other errors, and short
    lists that fit on the line anyway, are returned as they are.
    """
    message = str(err)
    allowed = getattr(err, "allowed", None)
    if not isinstance(allowed, str) or not allowed.startswith("one of ") or allowed not in message:
        return message
    if len(message) <= WRAP_WIDTH:
        return message
    at = message.index(allowed)
    head, tail = message[:at].rstrip(), message[at + len(allowed) :].strip()
    values = [v.strip() for v in allowed[len("one of ") :].split(", ")]
    first = f"{head} one of{(' ' + tail) if tail else ''}:"
    return f"{first}\n{wrap_values(values)}"
