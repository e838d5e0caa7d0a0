"""%npu help reads as a manual: HTML in a notebook, aligned text elsewhere, built from the parsers and traits.

(Tests of ``npu_jupyter/_notebook/manual.py``.)
"""

from __future__ import annotations

import re

from npu_jupyter._notebook import manual, subcommands
from npu_jupyter._notebook.magics import CELL_PARSER, NpuMagics


def _help(ip):
    return ip.run_line_magic("npu", "help")


def test_the_text_has_no_rst_markup_and_every_row_is_aligned_and_wrapped(ip):
    text = str(_help(ip))
    assert "``" not in text and "::" not in text
    lines = text.splitlines()
    assert all(len(line) <= manual.WIDTH for line in lines)
    titles = [line for line in lines if line and not line.startswith(" ")]
    assert titles[0].startswith("Line magic `%npu`") and len(titles) == 4  # everything else is indented
    flag_rows = [line for line in lines if re.match(r"  --", line)]
    assert len(flag_rows) == len(CELL_PARSER.names()) == 11
    texts_start = {len(row) - len(row[2:].split("  ", 1)[1].lstrip()) for row in flag_rows}
    assert len(texts_start) == 1  # the help texts start in one column


def test_the_html_lists_every_subcommand_flag_and_setting_in_tables(ip):
    html = _help(ip)._repr_html_()
    assert "``" not in html
    for name in CELL_PARSER.names():
        assert f"<code>{CELL_PARSER.flag_usage(name)}</code>" in html
    for parser in subcommands.SUBCOMMANDS:
        assert f"<code>{parser.usage_text()}</code>" in html
    for setting in NpuMagics.class_traits(config=True):
        assert f"<code>{setting} = " in html
    assert "<code>precision_mode</code>" in html  # prose backticks become code
    assert html.count("<table") == 4


def test_the_html_escapes_what_it_shows(ip):
    shown = _help(ip)
    shown.sections = [("a <b> `c<d>`", [("<x>", "y & z")], ("p <q>",))]
    html = shown._repr_html_()
    assert "<b>" not in html and "&lt;b&gt;" in html and "<code>c&lt;d&gt;</code>" in html
    assert "&lt;x&gt;" in html and "y &amp; z" in html and "p &lt;q&gt;" in html


def test_the_rows_are_what_the_parsers_say_in_their_order():
    """Changing a parser's argument or description changes the manual: nothing is written twice."""
    shown = NpuMagics.npu.__doc__
    usages = [parser.usage_text() for parser in subcommands.SUBCOMMANDS]
    assert usages[:3] == ["%npu show", "%npu set KEY=VALUE [KEY=VALUE ...]", "%npu unset KEY [KEY ...]"]
    assert "%npu code [--estimator]" in usages and "%npu adapter [emulate | off]" in usages
    positions = [shown.index(usage) for usage in usages]
    assert positions == sorted(positions)
    for parser in subcommands.SUBCOMMANDS:
        assert parser.description.split()[0] in shown
    assert CELL_PARSER.flag_usage("--profile") == "--profile [DIR]"
    assert CELL_PARSER.flag_usage("--set") == "--set KEY=VALUE [KEY=VALUE ...]"
    assert CELL_PARSER.flag_help("--quiet") == "do not render the run reports after the cell"
