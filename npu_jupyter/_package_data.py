"""Read the JSON tables shipped inside the package, on every Python the kernel side supports (3.7+).

``importlib.resources.files`` is 3.9+, ``importlib.resources.read_text`` is deprecated in 3.11-3.12:
one helper picks what the running Python has, so the data modules need no version checks of their own.
"""

from __future__ import annotations

from importlib import resources
from typing import cast


def read_package_text(package: str, name: str) -> str:
    """The UTF-8 text of data file ``name`` inside ``package`` (e.g. ``npu_jupyter._options``)."""
    files = getattr(resources, "files", None)
    if files is not None:
        return cast("str", files(package).joinpath(name).read_text(encoding="utf-8"))
    return resources.read_text(package, name, encoding="utf-8")
