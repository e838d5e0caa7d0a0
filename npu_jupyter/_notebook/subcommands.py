"""``%npu``'s subcommands: one argparse parser each, and the only list of them.

As jupysql's ``%sqlcmd`` does, the line magic reads the first word and hands the rest to that
subcommand's own parser. So ``%npu set --help`` prints that parser's help, ``%npu help`` lists the
subcommands from their parsers' usage and description, and a parse error names the subcommand, the
problem and the subcommand's usage line. The handlers live with the magic (``NpuMagics._cmd_<name>``).

A subcommand that only takes values (``KEY=VALUE``, a path, an op name) reads them all as values, even
one starting with ``-``: the handler then says what is wrong with it, next to every other problem of
the line, instead of argparse stopping at an "unrecognized argument".
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from IPython.core.error import UsageError

from npu_jupyter._notebook.arguments import one_line_usage, suggest

#: The words that ask a subcommand for its help instead of running it.
HELP_WORDS = ("-h", "--help")


class CommandParser(argparse.ArgumentParser):
    """The parser of one ``%npu`` subcommand; its errors are one UsageError ending with its usage.

    ``note`` follows the usage line in errors (``(quote a path with spaces)``).
    """

    def __init__(self, name: str, description: str, note: str = "") -> None:
        # no abbreviations: `%npu code --est` is refused, as before parsers read the line
        super().__init__(prog=f"%npu {name}", description=description, add_help=False, allow_abbrev=False)
        self.name = name
        self.note = note
        self.arguments: list[argparse.Action] = []  # what add_argument returned, in order

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """Add an argument as argparse does, also keeping the action (the manual and parse read them)."""
        action = super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action

    def usage_line(self) -> str:
        """``Usage: %npu save PATH   (quote a path with spaces)``: the line errors end with."""
        note = f"   {self.note}" if self.note else ""
        return f"Usage: {self.usage_text()}{note}"

    def usage_text(self) -> str:
        """``%npu save PATH``: argparse's usage without its ``usage:`` prefix, on one line."""
        return one_line_usage(self)

    def error(self, message: str) -> NoReturn:
        """The parser's complaint as one UsageError naming the subcommand and ending with its usage."""
        raise UsageError(f"%npu {self.name}: {message}.\n{self.usage_line()}")

    def parse(self, tokens: list[str]) -> argparse.Namespace:
        """The subcommand's arguments from the tokens after its name, or one UsageError."""
        values_only = bool(self.arguments) and not any(action.option_strings for action in self.arguments)
        args, extra = self.parse_known_args(["--", *tokens] if values_only else tokens)
        if extra:
            got = " ".join(extra)
            if not self.arguments:
                raise UsageError(f"%npu {self.name} takes no arguments, got {got!r}.\n{line_usage()}")
            flags = [flag for action in self.arguments for flag in action.option_strings]
            self.error(f"unexpected {got!r}{suggest(extra[0], flags)}")
        return args


def _parsers() -> tuple[CommandParser, ...]:
    """Every subcommand in the order a reader needs them (the manual's order)."""
    show = CommandParser("show", "show the options set, problems and warnings (also `%npu` alone)")
    assign = CommandParser(
        "set", "set options; the whole line or nothing is applied", "(%npu help options lists the keys)"
    )
    assign.add_argument("assignments", metavar="KEY=VALUE", nargs="+", help="an option and its value")
    unset = CommandParser("unset", "back to the adapter default", "(%npu help options lists the keys)")
    unset.add_argument("keys", metavar="KEY", nargs="+", help="an option name")
    reset = CommandParser("reset", "unset every option")
    panel = CommandParser("panel", "widget panel bound to the config")
    code = CommandParser("code", "equivalent Python (sess.run ConfigProto, or NPURunConfig)")
    code.add_argument("--estimator", action="store_true", help="the Estimator's NPURunConfig instead")
    save = CommandParser("save", "write the config as JSON", "(quote a path with spaces)")
    save.add_argument("path", metavar="PATH", help="the JSON file to write")
    load = CommandParser("load", "replace the config by one saved with `%npu save`")
    load.add_argument("path", metavar="PATH", help="a JSON file written by %%npu save")
    explain = CommandParser(
        "explain",
        "plan of the default graph for a tensor or op name",
        "(a tensor or op name of the default graph)",
    )
    explain.add_argument("fetch", metavar="FETCH", help="a tensor (mm:0) or op (mm) name of the default graph")
    adapter = CommandParser(
        "adapter",
        "which adapter sessions use; `emulate` installs an emulated npu_bridge",
        "(no argument: which adapter is in use)",
    )
    adapter.add_argument(
        "action", metavar="emulate | off", nargs="?", choices=("emulate", "off"), help="install or remove it"
    )
    manual = CommandParser(
        "help", "this manual; `options` lists every option by group, a subcommand's name shows its help"
    )
    return show, assign, unset, reset, panel, code, save, load, explain, adapter, manual


SUBCOMMANDS: tuple[CommandParser, ...] = _parsers()
_BY_NAME = {parser.name: parser for parser in SUBCOMMANDS}
_TOPICS = ("options", *_BY_NAME)
_BY_NAME["help"].add_argument(
    "topic", metavar="TOPIC", nargs="?", choices=_TOPICS, help="`options`, or a subcommand: " + ", ".join(_BY_NAME)
)


def names() -> tuple[str, ...]:
    """``show``, ``set``, ...: the subcommand names."""
    return tuple(_BY_NAME)


def parser(name: str) -> CommandParser:
    """The parser of subcommand ``name``; an unknown name is a UsageError with a did-you-mean."""
    found = _BY_NAME.get(name)
    if found is None:
        raise UsageError(f"unknown %npu subcommand {name!r}{suggest(name, list(_BY_NAME))}.\n{line_usage()}")
    return found


def line_usage() -> str:
    """``Usage: %npu [show | set KEY=VALUE [KEY=VALUE ...] | ...]``, from the parsers' usage."""
    forms = [p.usage_text()[len("%npu ") :] for p in SUBCOMMANDS]
    return "Usage: %npu [" + " | ".join(forms) + "]"
