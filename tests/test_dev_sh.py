"""./dev.sh keeps a clone clean: setup rewrites no tracked file, user work lives in an ignored folder,
and the test command checks the tutorials only (not a notebook someone saved next to them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the main suite runs on 3.11
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="dev.sh is a bash script")


def _tutorials(root: Path) -> list[str]:
    done = subprocess.run(["bash", str(root / "dev.sh"), "tutorials"], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_the_tutorials_are_the_notebooks_built_from_notebooks_src_and_nothing_else(tmp_path):
    shutil.copy(REPO / "dev.sh", tmp_path / "dev.sh")
    (tmp_path / "notebooks" / "src").mkdir(parents=True)
    for name in ("01_first", "02_second"):
        (tmp_path / "notebooks" / "src" / f"{name}.py").write_text("# %%\n")
        (tmp_path / "notebooks" / f"{name}.ipynb").write_text("{}")
    (tmp_path / "notebooks" / "Untitled.ipynb").write_text("{}")  # a user's notebook next to them
    assert _tutorials(tmp_path) == ["notebooks/01_first.ipynb", "notebooks/02_second.ipynb"]


def test_nbval_collects_exactly_the_tutorials_of_this_repository():
    tutorials = _tutorials(REPO)
    assert tutorials == sorted(f"notebooks/{src.stem}.ipynb" for src in (REPO / "notebooks" / "src").glob("[0-9]*.py"))
    assert all((REPO / nb).is_file() for nb in tutorials)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "--nbval", "-p", "no:cacheprovider", *tutorials],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    collected = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    assert collected == set(tutorials), done.stdout[-2000:]


def test_the_test_command_passes_the_tutorials_to_nbval_not_the_notebooks_folder():
    script = (REPO / "dev.sh").read_text(encoding="utf-8")
    [line] = [line for line in script.splitlines() if "-m pytest --nbval" in line]
    assert '"${notebooks[@]}"' in line and " notebooks " not in f"{line} "


def test_the_lab_workspace_and_what_it_collects_are_ignored_by_git():
    paths = ["work/Untitled.ipynb", "work/npu_dump/step_0/x.npy", "work/npu_prof/trace.json"]
    done = subprocess.run(["git", "check-ignore", *paths], cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode == 128:
        pytest.skip("not a git checkout")
    assert sorted(done.stdout.split()) == sorted(paths)
    script = (REPO / "dev.sh").read_text(encoding="utf-8")
    lab = script[script.index("    lab)") : script.index("    tutorials)")]
    assert "workspace" in lab and "cd work" in lab and "ui_setup" not in lab  # no Chromium for the lab


def test_setup_installs_no_test_only_browser():
    script = (REPO / "dev.sh").read_text(encoding="utf-8")
    setup = script[script.index("setup() {") : script.index("\n}\n", script.index("setup() {"))]
    assert "ui_setup" not in setup and "chromium" not in setup.lower()
    test = script[script.index("    test)") :]
    assert "bash .ci/ui_setup.sh" in test


def test_the_labextension_build_never_saves_the_lock_file():
    """hatch-jupyter-builder runs ``<npm> install`` during ``pip install``; ``--no-save`` keeps the lock as tracked."""
    hooks = tomllib.loads((REPO / "labextension" / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"][
        "build"
    ]["hooks"]["jupyter-builder"]
    for kwargs in ("build-kwargs", "editable-build-kwargs"):
        assert "--no-save" in hooks[kwargs]["npm"], kwargs


@pytest.mark.slow
def test_installing_the_labextensions_node_packages_leaves_the_lock_file_byte_for_byte(tmp_path):
    """What setup's build step runs, on a copy of labextension/: package-lock.json is not rewritten."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    listed = subprocess.run(["git", "ls-files", "labextension"], cwd=REPO, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for name in listed.stdout.split():  # the tracked files as they are in this tree
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    project = tmp_path / "labextension"
    lock = (project / "package-lock.json").read_bytes()
    hooks = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]["hooks"]
    command = [*hooks["jupyter-builder"]["editable-build-kwargs"]["npm"], "install", "--no-audit", "--no-fund"]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False, timeout=900)
    if done.returncode != 0:
        pytest.skip(f"npm install could not run here (offline?): {done.stderr[-500:]}")
    assert (project / "package-lock.json").read_bytes() == lock
    assert json.loads(lock)["lockfileVersion"] >= 2
