"""npu-jupyter-lab: the JupyterLab renderer for npu_jupyter reports, and nothing else.

This package goes into the environment that runs the Jupyter server. It has no dependencies (no
TensorFlow, no IPython, no npu_jupyter): the kernel-side package ``npu_jupyter`` goes into the
kernel's environment, which on an Ascend server is the one holding the adapter's TensorFlow. The two
talk only through the ``application/vnd.npu-jupyter.report+json`` output (docs/report-schema.md).
The same split as ipywidgets (kernel) and jupyterlab_widgets (server). Its version is written once, in
labextension/package.json (``importlib.metadata.version("npu-jupyter-lab")`` reads it when installed).
"""

from __future__ import annotations


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the prebuilt extension when it is not in share/jupyter (editable installs)."""
    return [{"src": "labextension", "dest": "npu-jupyter"}]
