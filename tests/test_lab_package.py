"""The renderer installs into a Jupyter server environment that has no TensorFlow and no kernel side.

``npu-jupyter-lab`` (labextension/pyproject.toml) is built into a wheel and installed with JupyterLab
into a fresh venv; JupyterLab must list the renderer as enabled and OK, and neither TensorFlow nor
``npu_jupyter`` may have come along. pip's cache makes the second run quick.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def _run(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` with none of this test run's Python path, so the server env sees only itself."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


@pytest.fixture(scope="module")
def server_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding only JupyterLab and the npu-jupyter-lab wheel; returns its bin directory."""
    root = tmp_path_factory.mktemp("server_env")
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", root / "dist", REPO / "labextension"
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next((root / "dist").glob("npu_jupyter_lab-*.whl"))
    made = _run(sys.executable, "-m", "venv", root / "venv")
    assert made.returncode == 0, made.stderr
    bin_dir = root / "venv" / "bin"
    # --no-compile: no .pyc for every module of JupyterLab's ~90 packages (a third of the install's time);
    # the three commands below import a small part of them.
    installed = _run(bin_dir / "python", "-m", "pip", "install", "--quiet", "--no-compile", "jupyterlab>=4.2,<5", wheel)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return bin_dir


def test_jupyterlab_lists_the_renderer_as_enabled_and_ok(server_env: Path) -> None:
    out = _run(server_env / "jupyter", "labextension", "list", cwd=server_env)
    text = out.stdout + out.stderr
    line = next((ln for ln in text.splitlines() if "npu-jupyter" in ln), "")
    assert "enabled" in line and "OK" in line, text
    assert "npu-jupyter-lab" in line, text  # installed by the lab package, not the kernel package


def test_the_server_env_got_neither_tensorflow_nor_the_kernel_package(server_env: Path) -> None:
    probe = _run(
        server_env / "python",
        "-c",
        "import importlib.util as u; print([m for m in ('tensorflow', 'npu_jupyter', 'ipywidgets') if u.find_spec(m)])",
        cwd=server_env,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]"


def test_the_renderer_wheel_takes_its_version_from_package_json(server_env: Path) -> None:
    """hatch-nodejs-version reads labextension/package.json, the renderer's one written version."""
    import json

    written = json.loads((REPO / "labextension" / "package.json").read_text(encoding="utf-8"))["version"]
    probe = _run(
        server_env / "python",
        "-c",
        "import importlib.metadata as m; print(m.version('npu-jupyter-lab'))",
        cwd=server_env,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == written
