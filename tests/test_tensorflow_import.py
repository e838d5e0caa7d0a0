"""Without TensorFlow the kernel side still loads, and whatever needs TensorFlow says what to install.

Each check runs in a fresh interpreter where ``import tensorflow`` fails the way it does when the
package is absent (``sys.modules["tensorflow"] = None``), so the TensorFlow of this venv cannot leak in.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from npu_jupyter._tensorflow_import import TensorFlowMissingError, require_tensorflow

_NO_TF = "import sys; sys.modules['tensorflow'] = None\n"


def _run_without_tensorflow(body: str) -> subprocess.CompletedProcess:
    """Run ``body`` in a new interpreter that cannot import TensorFlow."""
    code = _NO_TF + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def _expect_install_hint(body: str) -> None:
    """``body`` must end in TensorFlowMissingError naming the emulator extra, and nothing else."""
    wrapped = (
        "from npu_jupyter._tensorflow_import import TensorFlowMissingError\n"
        "try:\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n"
        "except TensorFlowMissingError as exc:\n"
        "    print('MISSING:', exc)\n"
    )
    result = _run_without_tensorflow(wrapped)
    assert result.returncode == 0, result.stderr
    assert "MISSING:" in result.stdout, result.stdout + result.stderr
    assert 'pip install "npu_jupyter[emulator]"' in result.stdout


def test_require_tensorflow_returns_the_module_when_it_is_installed():
    tf = require_tensorflow("a test")
    assert hasattr(tf, "compat")


def test_the_error_is_an_import_error_so_existing_except_importerror_code_still_works():
    assert issubclass(TensorFlowMissingError, ImportError)


def test_missing_tensorflow_names_the_feature_and_the_extra_to_install():
    _expect_install_hint("""
        from npu_jupyter._tensorflow_import import require_tensorflow
        require_tensorflow("the planner")
    """)
    result = _run_without_tensorflow("""
        from npu_jupyter._tensorflow_import import require_tensorflow
        require_tensorflow("the planner")
    """)
    assert "the planner needs it" in result.stderr


def test_config_options_and_code_generation_work_without_tensorflow():
    result = _run_without_tensorflow("""
        import npu_jupyter
        from npu_jupyter._options.config import NpuConfig
        cfg = NpuConfig(precision_mode="allow_mix_precision")
        print(cfg.precision_mode)
        assert "tensorflow" not in [m for m in sys.modules if sys.modules[m] is not None]
    """)
    assert result.returncode == 0, result.stderr
    assert "allow_mix_precision" in result.stdout


@pytest.mark.parametrize(
    "body",
    [
        "import npu_jupyter._runtime.session.emulator",
        "import npu_jupyter._runtime.ascend.backend",
        "import npu_jupyter; npu_jupyter.session(backend='emulator')",
        "from npu_jupyter.scope import npu_recompute_scope; npu_recompute_scope()",
    ],
)
def test_each_tensorflow_entry_point_raises_the_install_hint(body):
    _expect_install_hint(body)


def test_load_ext_and_npu_set_work_in_a_kernel_without_tensorflow():
    result = _run_without_tensorflow("""
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "npu_jupyter")
        ip.run_line_magic("npu", "set precision_mode=force_fp16")
        from npu_jupyter._notebook.state import current_config
        print(current_config().changed())
    """)
    assert result.returncode == 0, result.stderr
    assert "force_fp16" in result.stdout
