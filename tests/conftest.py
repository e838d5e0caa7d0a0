"""Suite-wide test setup: quiet TensorFlow logs and make ``tests/models.py`` importable everywhere."""

from __future__ import annotations

import json
import os
import sys
from collections import OrderedDict
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


#: Test modules whose tests share a costly module-scoped fixture or cache (a venv with the built wheel,
#: the plan digests computed in a subprocess, a TF2 script's run): split over workers, or reordered,
#: each worker would build it again.
MODULE_UNITS = ("tests/test_lab_package.py", "tests/plan/test_plan_digests.py", "tests/corpus/test_tf2_corpus.py")


def _work_unit(nodeid: str) -> str:
    """What one pytest-xdist worker runs together: a notebook's cells (nbval runs them in order in one
    kernel), the browser tests (one JupyterLab server, one built labextension) and the tests of each of
    :data:`MODULE_UNITS`; any other test alone.
    """
    path = nodeid.split("::", 1)[0]
    if path.endswith(".ipynb") or path in MODULE_UNITS:
        return path
    if path.startswith("tests/ui/"):
        return "tests/ui"
    return nodeid


#: Seconds of the work units CI measured as slow (data in unit_seconds.json); any other test counts this.
DEFAULT_TEST_SECONDS = 0.1


def unit_seconds(path: Path = TESTS_DIR / "unit_seconds.json") -> dict[str, float]:
    """The work units' expected seconds (setup + call in CI) the scheduler starts longest first."""
    return {unit: float(s) for unit, s in json.loads(path.read_text(encoding="utf-8"))["seconds"].items()}


def heaviest_first(units: dict[str, list[str]], seconds: dict[str, float]) -> list[str]:
    """Work units in the order to start them: longest expected first (a unit's listed seconds, else
    :data:`DEFAULT_TEST_SECONDS` per test), so the long corpus models do not start last and leave one
    worker running alone at the end; equal units keep their given order.
    """
    weight = {unit: seconds.get(unit, DEFAULT_TEST_SECONDS * len(tests)) for unit, tests in units.items()}
    return sorted(units, key=lambda unit: -weight[unit])


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # the legacy legs run without pytest-xdist
    pass
else:

    class _HeaviestFirstQueue(OrderedDict):  # type: ignore[type-arg]
        """xdist's work queue, whose next unit (``popitem(last=False)``) is the longest expected one."""

        def __init__(self, seconds: dict[str, float]) -> None:
            super().__init__()
            self.seconds = seconds
            self.ordered = True

        def __setitem__(self, unit: str, tests: dict[str, bool]) -> None:
            super().__setitem__(unit, tests)
            self.ordered = False  # reordered once before the next unit is handed out

        def popitem(self, last: bool = True) -> tuple[str, dict[str, bool]]:
            if not last and not self.ordered:
                for unit in heaviest_first({u: list(tests) for u, tests in self.items()}, self.seconds):
                    self.move_to_end(unit)
                self.ordered = True
            return super().popitem(last)

    class _Scheduling(LoadScopeScheduling):
        """Load scheduling in the units of :func:`_work_unit`, the longest expected units first.

        pytest-xdist's ``--dist loadgroup`` would do the units from marks, but it renames node ids in a way
        pytest 9 no longer reads, so the groups are made from the node ids here.
        """

        def __init__(self, config, log=None):
            super().__init__(config, log)
            self.workqueue = _HeaviestFirstQueue(unit_seconds())

        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

    def pytest_xdist_make_scheduler(config, log):
        """Schedule by :func:`_work_unit` when the main suite runs on several workers (``./dev.sh test``)."""
        return _Scheduling(config, log)


#: Entries of the repository's top folder (and the working folder) when the session started.
_TOP_LEVEL_AT_START: dict[Path, set[str]] = {}


def _top_folders() -> list[Path]:
    """Where a test writing to a relative path would leave files: the repository and the working folder."""
    return list(dict.fromkeys([TESTS_DIR.parent, Path.cwd().resolve()]))


def pytest_sessionstart(session):
    """Record the top folders' entries, so :func:`pytest_sessionfinish` can name what the tests left."""
    for folder in _top_folders():
        _TOP_LEVEL_AT_START[folder] = set(os.listdir(folder))


def _left_behind(folder: Path, before: set[str]) -> list[str]:
    """New entries of ``folder`` that git neither tracks nor ignores (caches such as .hypothesis are ignored).

    Empty folders count: ``git status`` does not show them, which is how a test that made a folder named
    after a fuzzed option value in the working folder went unnoticed.
    """
    import subprocess

    new = sorted(set(os.listdir(folder)) - before)
    if not new:
        return []
    try:
        ignored = subprocess.run(
            ["git", "-C", str(folder), "check-ignore", "--stdin", "-z"],
            input="\0".join(new) + "\0",
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # no git: nothing to tell caches from leftovers
        return []
    if ignored.returncode not in (0, 1):  # 128: not a git repository
        return []
    return [name for name in new if name not in set(ignored.stdout.split("\0"))]


def pytest_sessionfinish(session, exitstatus):
    """Fail the run when tests left files or folders in the repository or the working folder.

    Every test writes under a temporary folder; the check runs once, in the process that started the
    session (under pytest-xdist, the controller, after every worker finished).
    """
    if hasattr(session.config, "workerinput"):
        return
    leftovers = {folder: _left_behind(folder, before) for folder, before in _TOP_LEVEL_AT_START.items()}
    text = "; ".join(f"{folder}: {', '.join(repr(n) for n in names)}" for folder, names in leftovers.items() if names)
    if text:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"tests left these behind (write under tmp_path): {text}", red=True)
        session.exitstatus = 1


@pytest.fixture
def tf1_variables():
    """TF 1.15's variables and control flow, as ``disable_v2_behavior()`` sets them; put back after."""
    import tensorflow as tf

    v1 = tf.compat.v1
    resource, control_flow = v1.resource_variables_enabled(), v1.control_flow_v2_enabled()
    v1.disable_resource_variables()
    v1.disable_control_flow_v2()
    yield
    if resource:
        v1.enable_resource_variables()
    if control_flow:
        v1.enable_control_flow_v2()
