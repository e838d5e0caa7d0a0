"""The version is written once per package: npu_jupyter/__init__.py for the kernel side, package.json for
the renderer; both builds derive their metadata from it, and the two releases carry the same number."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import npu_jupyter

REPO = Path(__file__).resolve().parents[1]
_LITERAL = re.compile(r"""^\s*(__version__|"?version"?)\s*[=:]\s*["']\d""", re.MULTILINE)

if sys.version_info >= (3, 11):
    import tomllib
else:  # the legacy leg's Python 3.9
    tomllib = pytest.importorskip("tomli")


def _toml(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_the_renderer_releases_with_the_kernel_packages_version():
    package = json.loads((REPO / "labextension" / "package.json").read_text(encoding="utf-8"))
    assert package["version"] == npu_jupyter.__version__


def test_both_pyprojects_derive_the_version_instead_of_writing_it():
    kernel = _toml(REPO / "pyproject.toml")
    lab = _toml(REPO / "labextension" / "pyproject.toml")
    assert "version" not in kernel["project"] and kernel["project"]["dynamic"] == ["version"]
    assert kernel["tool"]["hatch"]["version"] == {"path": "npu_jupyter/__init__.py"}
    assert "version" not in lab["project"] and lab["project"]["dynamic"] == ["version"]
    assert lab["tool"]["hatch"]["version"] == {"source": "nodejs"}
    assert any(req.startswith("hatch-nodejs-version") for req in lab["build-system"]["requires"])


def test_no_other_python_file_writes_a_version_number():
    written = [
        str(path.relative_to(REPO))
        for root in (REPO / "npu_jupyter", REPO / "labextension" / "npu_jupyter_lab")
        for path in root.rglob("*.py")
        if _LITERAL.search(path.read_text(encoding="utf-8"))
    ]
    assert written == ["npu_jupyter/__init__.py"]


@pytest.mark.slow
def test_the_built_wheel_carries_the_packages_version(tmp_path):
    """What `pip install .` (and the legacy leg's wheel) reads: hatch takes __version__ from the package."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next(tmp_path.glob("npu_jupyter-*.whl"))
    assert wheel.name.startswith(f"npu_jupyter-{npu_jupyter.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"npu_jupyter-{npu_jupyter.__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {npu_jupyter.__version__}\n" in metadata
