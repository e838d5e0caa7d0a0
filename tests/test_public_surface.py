"""The public surface is ``npu_jupyter.__all__`` plus the few packages users import by name; the rest is
private (``_name``), so the function ``npu_jupyter.plan`` no longer shares its name with a package."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import npu_jupyter

ROOT = Path(__file__).resolve().parents[1]

#: the public modules below npu_jupyter, each with why users import it by name.
PUBLIC = {
    "scope": "the adapter's scope context managers (in __all__)",
    "adapter": "the emulated npu_bridge / npu_device modules resolve to it; adapter.status(), NotEmulatedError",
    "cost": "docs/cost-model.md: cost.estimate, cost.attach.with_estimate",
    "__main__": "python -m npu_jupyter",
}


def test_every_other_module_is_private() -> None:
    names = {m.name for m in pkgutil.iter_modules(npu_jupyter.__path__)}
    public = {n for n in names if not n.startswith("_")}
    assert public <= set(PUBLIC), (
        f"make these private (_name) or document why users import them: {public - set(PUBLIC)}"
    )


@pytest.mark.parametrize("name", npu_jupyter.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(npu_jupyter, name) is not None


PLAN_CALL = """
import types
import tensorflow as tf
import npu_jupyter
graph = tf.Graph()
with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
    tf.identity(tf.matmul(x, tf.ones([3, 4])), name="y")
result = npu_jupyter.plan(graph, fetches=["y"])
assert not isinstance(npu_jupyter.plan, types.ModuleType), npu_jupyter.plan
print(type(result).__name__, "y" in result.ops)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "first",
    [
        "import npu_jupyter._plan.model, npu_jupyter._runtime.report",  # the planner's modules first
        "import npu_jupyter; npu_jupyter.plan",  # the public function first
        "from npu_jupyter import plan",
    ],
)
def test_plan_is_the_function_in_either_import_order(first: str) -> None:
    pytest.importorskip("tensorflow")
    done = subprocess.run(
        [sys.executable, "-c", first + "\n" + PLAN_CALL], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["Plan", "True"]


def test_the_plan_package_is_an_ordinary_module() -> None:
    import npu_jupyter._plan as package

    assert type(package) is types.ModuleType
    assert not callable(package)
