"""%npu / %%npu in a real IPython shell: parsing, atomicity, the shared config, help, loading."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from npu_jupyter._notebook import subcommands
from npu_jupyter._notebook.magics import NpuMagics
from npu_jupyter._notebook.state import current_config


def test_load_ext_registers_line_and_cell_magic_and_the_configurable(ip):
    magics = ip.magics_manager.lsmagic()
    assert "npu" in magics["line"] and "npu" in magics["cell"]
    assert sum(isinstance(c, NpuMagics) for c in ip.configurables) == 1
    ip.run_line_magic("load_ext", "npu_jupyter")  # loading twice keeps one configurable
    ip.run_line_magic("reload_ext", "npu_jupyter")
    assert sum(isinstance(c, NpuMagics) for c in ip.configurables) == 1


def test_config_magic_sets_display_traits_and_rejects_unknown_values(ip):
    from npu_jupyter._display import html

    ip.run_line_magic("config", "NpuMagics.detail = 'full'")
    assert html.default_detail() == "full"
    magics = next(c for c in ip.configurables if isinstance(c, NpuMagics))
    with capture_output():  # %config reports the TraitError itself; the setting must not change
        ip.run_line_magic("config", "NpuMagics.detail = 'bogus'")
    assert magics.detail == "full" and html.default_detail() == "full"
    magics = next(c for c in ip.configurables if isinstance(c, NpuMagics))
    assert magics.detail == "full"
    with pytest.raises(Exception, match="summary"):
        magics.detail = "everything"
    ip.run_line_magic("config", "NpuMagics.backend = 'emulator'")
    assert magics.backend == "emulator"


def test_set_types_values_by_the_option_catalogue(ip):
    ip.run_line_magic("npu", 'set mix_compile_mode=1 iterations_per_loop=1 dump_path="/tmp/my dumps" enable_dump=yes')
    assert current_config().changed() == {
        "iterations_per_loop": 1,
        "mix_compile_mode": True,
        "enable_dump": True,
        "dump_path": "/tmp/my dumps",
    }
    assert current_config().mix_compile_mode is True and current_config().dump_path == "/tmp/my dumps"


def test_unset_and_reset_bring_adapter_defaults_back(ip):
    ip.run_line_magic("npu", "set precision_mode=force_fp16 mix_compile_mode=true")
    ip.run_line_magic("npu", "unset precision_mode")
    assert current_config().changed() == {"mix_compile_mode": True}
    ip.run_line_magic("npu", "reset")
    assert current_config().changed() == {}


def test_a_line_with_one_bad_part_changes_nothing_and_names_every_problem(ip):
    ip.run_line_magic("npu", "set precision_mode=force_fp32")
    with pytest.raises(UsageError) as err:
        ip.run_line_magic("npu", "set mix_compile_mode=true precision_mode=force_fp17 iterations_per_loop=ten")
    text = str(err.value)
    assert "2 problems, nothing was changed" in text
    assert "force_fp17" in text and "iterations_per_loop" in text and "Usage: %npu set" in text
    assert current_config().changed() == {"precision_mode": "force_fp32"}


def test_misspelt_option_name_gets_a_did_you_mean(ip):
    with pytest.raises(UsageError, match="did you mean 'precision_mode'"):
        ip.run_line_magic("npu", "set precison_mode=force_fp16")
    with pytest.raises(UsageError, match="did you mean 'mix_compile_mode'"):
        ip.run_line_magic("npu", "unset mix_compile_mod")
    assert current_config().changed() == {}


def test_unknown_subcommand_and_unclosed_quote_are_usage_errors(ip):
    with pytest.raises(UsageError, match="did you mean set"):
        ip.run_line_magic("npu", "sett precision_mode=force_fp16")
    with pytest.raises(UsageError, match="No closing quotation"):
        ip.run_line_magic("npu", 'set dump_path="/tmp/x')
    with pytest.raises(UsageError, match="takes no arguments"):
        ip.run_line_magic("npu", "reset now")


def test_show_lists_set_options_and_cross_option_problems(ip):
    ip.run_line_magic("npu", "set mix_compile_mode=true iterations_per_loop=10")
    view = ip.run_line_magic("npu", "")
    text = repr(view)
    assert "mix_compile_mode = True" in text and "iterations_per_loop = 10" in text
    assert "problem:" in text and "iterations_per_loop" in view._repr_html_()


def test_save_then_load_replaces_the_whole_config(ip, tmp_path):
    path = tmp_path / "my config.json"
    ip.run_line_magic("npu", "set precision_mode=allow_mix_precision")
    ip.run_line_magic("npu", f'save "{path}"')
    assert json.loads(path.read_text())  # a JSON file
    ip.run_line_magic("npu", "reset")
    ip.run_line_magic("npu", "set mix_compile_mode=true")
    with capture_output():
        ip.run_line_magic("npu", f'load "{path}"')
    assert current_config().changed() == {"precision_mode": "allow_mix_precision"}


def test_load_of_a_missing_file_is_a_usage_error_and_keeps_the_config(ip, tmp_path):
    ip.run_line_magic("npu", "set mix_compile_mode=true")
    with pytest.raises(UsageError, match="config is unchanged"):
        ip.run_line_magic("npu", f"load {tmp_path / 'missing.json'}")
    assert current_config().changed() == {"mix_compile_mode": True}


def test_code_prints_the_equivalent_python(ip):
    ip.run_line_magic("npu", "set precision_mode=force_fp16")
    with capture_output() as cap:
        ip.run_line_magic("npu", "code")
    assert "NpuOptimizer" in cap.stdout and "force_fp16" in cap.stdout
    with capture_output() as cap:
        ip.run_line_magic("npu", "code --estimator")
    assert "NPURunConfig" in cap.stdout
    with pytest.raises(UsageError, match="Usage: %npu code"):
        ip.run_line_magic("npu", "code --estimatr")


def test_help_is_the_manual_also_shown_by_the_magics_docstring_and_lists_options_by_group(ip):
    text = str(ip.run_line_magic("npu", "help"))
    for usage in ("%npu set KEY=VALUE", "%npu explain FETCH", "--dump-step STEPS", "--profile [DIR]", "--quiet"):
        assert usage in text
    assert text == NpuMagics.npu.__doc__  # %npu? shows the same manual
    with capture_output() as cap:
        ip.run_line_magic("npu", "help options")
    assert "[precision]" in cap.stdout and "precision_mode (one of" in cap.stdout


def test_panel_subcommand_edits_the_shared_config(ip):
    panel = ip.run_line_magic("npu", "panel")
    assert panel.config is current_config()
    panel.close()


def test_load_ext_does_not_import_tensorflow():
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\n"
        "ip.run_line_magic('load_ext', 'npu_jupyter')\n"
        "ip.run_line_magic('npu', 'set precision_mode=force_fp16')\n"
        "ip.run_line_magic('npu', 'show')\n"
        "ip.run_line_magic('config', 'NpuMagics.detail = \"full\"')\n"
        "assert 'npu' in ip.magics_manager.magics['cell']\n"
        "print(sorted(m for m in ('tensorflow', 'npu_jupyter._plan.planner', 'ipywidgets') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"  # after the one-line tf.keras note (legacy_keras.py)


def test_unload_removes_the_magics_but_keeps_the_session_config(ip):
    ip.run_line_magic("npu", "set mix_compile_mode=true")
    ip.run_line_magic("unload_ext", "npu_jupyter")
    assert "npu" not in ip.magics_manager.magics["line"]
    assert not any(isinstance(c, NpuMagics) for c in ip.configurables)
    ip.run_line_magic("load_ext", "npu_jupyter")
    assert current_config().changed() == {"mix_compile_mode": True}


@pytest.mark.skipif(
    int(__import__("IPython").__version__.split(".")[0]) < 8,
    reason="MagicsManager.lazy_magics is IPython >= 8 (Python 3.7 kernels have IPython 7)",
)
def test_ipython_config_can_autoload_the_magics_lazily_and_set_their_traits():
    code = (
        "import sys\n"
        "from traitlets.config import Config\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "c = Config()\n"
        "c.MagicsManager.lazy_magics = {'npu': 'npu_jupyter'}\n"
        "c.NpuMagics.detail = 'full'\n"
        "ip = InteractiveShell.instance(config=c)\n"
        "assert 'npu_jupyter' not in sys.modules\n"
        "ip.run_line_magic('npu', 'set mix_compile_mode=true')\n"
        "from npu_jupyter import current_config\n"
        "from npu_jupyter._display.html import default_detail\n"
        "print(current_config().changed(), default_detail())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "{'mix_compile_mode': True} full"  # after the tf.keras note


def test_explain_renders_the_plan_of_a_default_graph_op_at_the_magics_detail(ip):
    tf = pytest.importorskip("tensorflow")
    with tf.compat.v1.get_default_graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="explain_x")
        tf.matmul(x, tf.ones([4, 4]), name="explain_mm")
    ip.run_line_magic("npu", "set precision_mode=allow_fp32_to_fp16")
    rendered = ip.run_line_magic("npu", "explain explain_mm:0")
    bundle = rendered._repr_mimebundle_()
    payload = bundle["application/vnd.npu-jupyter.report+json"]
    assert [op["n"] for op in payload["ops"]][-1] == "explain_mm"
    assert payload["effective_precision_mode"] == "allow_fp32_to_fp16"
    assert "explain_mm" in bundle["text/html"]
    # the title says which fetch this is the plan of, like a run report's "Run of ..."
    assert payload["title"].startswith("Plan of explain_mm:0 (Ascend910, allow_fp32_to_fp16) · ")
    assert "ops · full offload" in payload["title"]
    with pytest.raises(UsageError, match="did you mean explain_mm"):
        ip.run_line_magic("npu", "explain explain_mn")


def test_set_applies_a_half_finished_combination_but_says_what_is_not_valid_yet(ip):
    with capture_output() as cap:
        ip.run_line_magic("npu", "set mix_compile_mode=true iterations_per_loop=4")
    assert current_config().iterations_per_loop == 4
    assert "not valid yet" in cap.stdout and "iterations_per_loop" in cap.stdout
    with capture_output() as cap:
        ip.run_line_magic("npu", "set iterations_per_loop=1")
    assert cap.stdout == ""


def test_save_to_a_path_under_a_regular_file_is_a_usage_error_and_writes_nothing(ip, tmp_path):
    (tmp_path / "file").write_text("a regular file")
    ip.run_line_magic("npu", "set mix_compile_mode=true")
    with pytest.raises(UsageError, match="cannot save the NPU config.*nothing was written"):
        ip.run_line_magic("npu", f"save {tmp_path / 'file' / 'config.json'}")
    assert (tmp_path / "file").read_text() == "a regular file"
    assert current_config().changed() == {"mix_compile_mode": True}


def test_load_of_a_non_utf8_file_is_a_usage_error_and_keeps_the_config(ip, tmp_path):
    ip.run_line_magic("npu", "set precision_mode=force_fp16")
    path = tmp_path / "config.json"
    path.write_bytes(b'{"dump_path": "\xff"}')
    with pytest.raises(UsageError, match="config.json.*config is unchanged"):
        ip.run_line_magic("npu", f"load {path}")
    assert current_config().changed() == {"precision_mode": "force_fp16"}


def test_bare_json_that_lost_its_quotes_gets_told_how_to_quote_it_and_the_hint_works(ip):
    with pytest.raises(UsageError, match="wrap the JSON in single quotes") as info:
        ip.run_line_magic("npu", 'set profiling_options={"output":"/tmp/p","task_trace":"on"}')
    assert current_config().changed() == {}
    hint = str(info.value).split("e.g. %npu ", 1)[1].split("')", 1)[0] + "'"
    ip.run_line_magic("npu", hint)
    assert current_config().changed() == {"profiling_options": '{"output":"/tmp/profiling","task_trace":"on"}'}


def test_explain_of_an_output_slot_the_op_does_not_have_is_a_usage_error(ip):
    tf = pytest.importorskip("tensorflow")
    with tf.compat.v1.get_default_graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 2], name="slot_x")
        tf.matmul(x, x, name="slot_mm")
    with pytest.raises(UsageError, match=r"explain slot_mm:3: .*only has 1 output"):
        ip.run_line_magic("npu", "explain slot_mm:3")
    with pytest.raises(UsageError, match="explain slot_mm:x"):
        ip.run_line_magic("npu", "explain slot_mm:x")
    assert ip.run_line_magic("npu", "explain slot_mm:0") is not None


def test_refused_choice_lists_allowed_values_on_own_lines_never_splitting_a_value(ip):
    from npu_jupyter._notebook.arguments import WRAP_WIDTH
    from npu_jupyter._options import catalogue

    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("npu", "set precision_mode=fp16maybe")
    text = str(caught.value)
    lines = text.splitlines()
    assert lines[0] == "precision_mode: 'fp16maybe' is not allowed; choose one of:"
    value_lines = [line for line in lines if line.startswith("    ")]
    assert value_lines and all(len(line) <= WRAP_WIDTH for line in value_lines)
    listed = [v.strip() for line in value_lines for v in line.split(",") if v.strip()]
    assert listed == [repr(c) for c in catalogue.spec("precision_mode").choices]  # whole values, in order
    assert "Nothing was changed." in lines and "Traceback" not in text
    assert current_config().precision_mode is None


def test_several_refusals_keep_each_values_block_under_its_own_item(ip):
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("npu", "set precision_mode=fp16maybe mix_compile_mode=maybe")
    lines = str(caught.value).splitlines()
    assert lines[0] == "2 problems, nothing was changed:"
    assert lines[1] == "  - precision_mode: 'fp16maybe' is not allowed; choose one of:"
    assert lines[2].startswith("        'force_fp32', ")
    assert any(line.startswith("  - mix_compile_mode: 'maybe' is not a bool") for line in lines)


@pytest.mark.parametrize("name", subcommands.names())
def test_each_subcommand_help_is_its_parsers_and_runs_nothing(ip, name):
    ip.run_line_magic("npu", "set mix_compile_mode=true")
    parser = subcommands.parser(name)
    for line in (f"{name} --help", f"{name} -h", f"help {name}"):
        with capture_output() as cap:
            assert ip.run_line_magic("npu", line) is None
        assert cap.stdout.rstrip("\n") == parser.format_help().rstrip("\n"), line
        assert cap.stdout.startswith(f"usage: %npu {name}")
    assert hasattr(NpuMagics, f"_cmd_{name}")  # every parser has its handler
    assert current_config().changed() == {"mix_compile_mode": True}


def test_help_after_values_shows_the_help_and_applies_nothing(ip):
    with capture_output() as cap:
        ip.run_line_magic("npu", "set precision_mode=force_fp16 --help")
    assert "KEY=VALUE" in cap.stdout and "an option and its value" in cap.stdout
    assert current_config().changed() == {}


def test_npu_dash_dash_help_is_the_manual(ip):
    assert str(ip.run_line_magic("npu", "--help")) == str(ip.run_line_magic("npu", "help"))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("save a b", "%npu save: unexpected 'b'.\nUsage: %npu save PATH   (quote a path with spaces)"),
        ("save", "%npu save: the following arguments are required: PATH"),
        ("load", "Usage: %npu load PATH"),
        ("explain", "Usage: %npu explain FETCH   (a tensor or op name of the default graph)"),
        ("adapter on", "invalid choice: 'on'"),
        ("adapter on", "Usage: %npu adapter [emulate | off]   (no argument: which adapter is in use)"),
        ("help optoins", "invalid choice: 'optoins'"),
        ("code --est", "unexpected '--est' (did you mean --estimator?)"),
        ("set", "%npu set: the following arguments are required: KEY=VALUE"),
        ("unset", "Usage: %npu unset KEY [KEY ...]   (%npu help options lists the keys)"),
        ("panel x", "%npu panel takes no arguments, got 'x'.\nUsage: %npu [show | set KEY=VALUE"),
    ],
)
def test_a_subcommand_parse_error_says_what_was_wrong_and_ends_with_its_usage(ip, line, expected):
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("npu", line)
    assert expected in str(caught.value)


def test_a_value_starting_with_a_dash_is_read_as_a_value_and_reported_with_the_others(ip):
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("npu", "set --bogus precision_mode=force_fp17")
    text = str(caught.value)
    assert "2 problems, nothing was changed" in text and "'--bogus' is not KEY=VALUE" in text
    assert current_config().changed() == {}


def test_cell_magic_help_is_ipythons_magic_arguments_usage(ip):
    text = ip.object_inspect_text("%%npu")
    assert "%%npu [--mix] [--no-mix] [--precision MODE]" in text
    for name in ("--dump-step STEPS", "--reference", "--verbose", "do not render the run reports after the cell"):
        assert name in text
    assert "Line magic `%npu`" not in text  # the line magic's manual is %npu?, not %%npu?
    assert "Line magic `%npu`" in ip.object_inspect_text("%npu")


def test_the_magics_are_plain_ipython_magics_configured_through_their_shell(ip):
    from IPython.core.magic import Magics
    from traitlets.config import Config

    assert NpuMagics.__bases__ == (Magics,)  # Magics is already a traitlets Configurable
    before = ip.config
    ip.config = Config({"NpuMagics": {"backend": "emulator"}})  # ipython_config.py's c.NpuMagics.backend
    try:
        magics = NpuMagics(shell=ip)
        assert magics.backend == "emulator"
        assert magics in ip.configurables
        ip.configurables.remove(magics)
    finally:
        ip.config = before
