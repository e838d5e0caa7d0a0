"""Suite-wide test setup: quiet TensorFlow logs and make ``tests/models.py`` importable everywhere."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


def _work_unit(nodeid: str) -> str:
    """What one pytest-xdist worker runs together: a notebook's cells (nbval runs them in order in one
    kernel) and the browser tests (one JupyterLab server, one built labextension); any other test alone.
    """
    path = nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        return path
    if path.startswith("tests/ui/"):
        return "tests/ui"
    return nodeid


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # the legacy legs run without pytest-xdist
    pass
else:

    class _Scheduling(LoadScopeScheduling):
        """Load scheduling in the units of :func:`_work_unit`, the largest units first.

        pytest-xdist's ``--dist loadgroup`` would do this from marks, but it renames node ids in a way
        pytest 9 no longer reads, so the groups are made from the node ids here.
        """

        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

    def pytest_xdist_make_scheduler(config, log):
        """Schedule by :func:`_work_unit` when the main suite runs on several workers (``./dev.sh test``)."""
        return _Scheduling(config, log)
