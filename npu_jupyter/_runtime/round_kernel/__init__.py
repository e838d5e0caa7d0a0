"""The one-node storage rounding: build, check and load the ``NpuEmuRound`` TensorFlow op.

The emulator rounds a float32 tensor the device stores in half precision. TensorFlow alone does it
with two ``Cast`` nodes (float32 -> float16 -> float32), and on a step that rounds every op's output
that round trip is most of what emulating ``allow_mix_precision`` costs over a plain session (issue
#23: 1.19x of an MLP step, 1.29x of ResNet-50's, before any check). ``round_kernel.cc`` (beside this
module) does the round trip in one kernel and one pass, and in the same pass tells whether a value it
wrote or read is inf/NaN, so the all-finite flags of those tensors cost no node either;
``NpuEmuCheck`` checks the other flagged tensors in one read-only pass.

It is C++, so it is compiled on the user's machine against the TensorFlow installed there (``python
-m npu_jupyter build-kernel``; ``./dev.sh setup`` runs it; about 10 s), the way TensorFlow's guide to
custom ops builds one (``tf.sysconfig`` flags, ``tf.load_op_library``). A build is installed only
after :mod:`.check`, in a separate process, has found it bit-equal to the Cast pair on every float16
boundary: a library that would crash or differ never reaches the user's kernel. The file is keyed by
the source, the TensorFlow build and the machine (computed once per process: TensorFlow is not swapped
under a running kernel), so a TensorFlow upgrade simply finds no library until the next build.
Without one (no compiler, another TensorFlow, ``NPU_JUPYTER_ROUND_KERNEL=0``) the emulator uses the
Cast pair: the same numbers, more slowly.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from npu_jupyter._tensorflow_import import require_tensorflow

SOURCE = Path(__file__).with_name("round_kernel.cc")
CHECK = Path(__file__).with_name("check.py")
OP_TYPE = "NpuEmuRound"
CHECK_OP_TYPE = "NpuEmuCheck"
#: ``0`` turns the kernel off in this process (the Cast pair is used); read at every graph rewrite.
SWITCH_ENV = "NPU_JUPYTER_ROUND_KERNEL"
#: A folder for built libraries instead of the default (:func:`cache_dir`).
CACHE_ENV = "NPU_JUPYTER_CACHE"
_COMPILERS = ("g++", "c++", "clang++")
_TIMEOUT_S = 600


class KernelBuildError(RuntimeError):
    """The rounding kernel could not be built or did not pass its check; nothing was installed."""


def cache_dir() -> Path:
    """The folder built libraries live in (created by :func:`build`, never by a lookup).

    ``$NPU_JUPYTER_CACHE/kernels`` when set. In a virtual environment, inside it
    (``<venv>/var/cache/npu_jupyter/kernels``): the library belongs to that environment's TensorFlow
    and goes when the environment goes. Otherwise the user's cache (``$XDG_CACHE_HOME`` or
    ``~/.cache``, then ``npu_jupyter/kernels``).
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser() / "kernels"
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        return Path(sys.prefix) / "var" / "cache" / "npu_jupyter" / "kernels"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "npu_jupyter" / "kernels"


def library_path() -> Path:
    """The library built from this source for this TensorFlow on this machine (it may not exist)."""
    return cache_dir() / f"npu_emu_round-{_build_key()}.so"


def in_use() -> bool:
    """True when rewrites should round through ``NpuEmuRound``: switched on and loaded in this process."""
    if os.environ.get(SWITCH_ENV, "1").strip() == "0":
        return False
    return _load() is None


def status() -> str:
    """One line for the user: whether the kernel is in use, and if not, why and what to do."""
    if os.environ.get(SWITCH_ENV, "1").strip() == "0":
        return f"rounding kernel: off ({SWITCH_ENV}=0): storage rounding uses TensorFlow's Cast pairs"
    problem = _load()
    if problem is None:
        return f"rounding kernel: in use ({library_path()})"
    return (
        f"rounding kernel: not in use, {problem}; storage rounding uses TensorFlow's Cast pairs (same numbers, slower)"
    )


_LOADED: dict[str, str | None] = {}  # library path -> None when loaded, else why TensorFlow refused it


def _load() -> str | None:
    """Load the built library once per process; None when loaded, else why it is not in use.

    A library not built yet is looked for again at the next call (a stat), so one built while the
    kernel runs (``!python -m npu_jupyter build-kernel``) is used from the next rewrite on. TensorFlow
    cannot hold two libraries that register the same op (every later ``NpuEmuRound`` would fail with
    "Multiple OpKernel registrations"), so once one is loaded, another build is not loaded beside it.
    """
    path = library_path()
    key = str(path)
    if key in _LOADED:
        return _LOADED[key]
    if not path.is_file():
        return "it is not built for this TensorFlow (python -m npu_jupyter build-kernel builds it)"
    loaded = [other for other, problem in _LOADED.items() if problem is None]
    if loaded:
        return f"another build of it ({Path(loaded[0]).name}) is loaded in this process: restart it to use {path.name}"
    tf = require_tensorflow("the rounding kernel")
    try:
        tf.load_op_library(key)
        _LOADED[key] = None
    except Exception as exc:  # noqa: BLE001 - a library TensorFlow refuses: say so, round with Casts
        _LOADED[key] = f"TensorFlow did not load {path.name}: {exc}"
    return _LOADED[key]


def build(*, force: bool = False, compiler: str | None = None) -> Path:
    """Compile, check and install the library for this TensorFlow; return its path.

    An installed library is kept unless ``force``. The build happens in a temporary file next to the
    final one; only a library that passed :mod:`.check` is moved into place (one rename),
    so a failed or interrupted build leaves nothing behind. Raises :class:`KernelBuildError`.
    """
    target = library_path()
    if target.is_file() and not force:
        return target
    cxx = _compiler(compiler)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(prefix=".building-", suffix=".so", dir=target.parent)
        os.close(handle)
    except OSError as exc:
        raise KernelBuildError(f"cannot write the rounding kernel to {target.parent}: {exc}") from exc
    try:
        _run([cxx, *_compile_command(scratch)], "compiling round_kernel.cc failed")
        _run([sys.executable, str(CHECK), scratch], "the built kernel failed its check against the Cast pair")
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    return target


def _compiler(name: str | None) -> str:
    """The C++ compiler to use: ``name``, ``$CXX``, or the first of g++/c++/clang++ on PATH."""
    for candidate in (name, os.environ.get("CXX"), *_COMPILERS):
        if candidate and shutil.which(candidate):
            return candidate
    raise KernelBuildError(
        "no C++ compiler found (tried $CXX, " + ", ".join(_COMPILERS) + "); install one (Debian: apt install g++) "
        "or go on without the kernel: the emulator then rounds with TensorFlow's Cast pairs, same numbers, slower"
    )


def _compile_command(output: str) -> list[str]:
    """Arguments after the compiler: a shared library against this TensorFlow's headers and framework."""
    tf = require_tensorflow("building the rounding kernel")
    flags = tf.sysconfig.get_compile_flags()
    # TensorFlow before 2.10 names no standard and was built as C++14: compiled as C++17, its
    # absl::string_view becomes std::string_view and the library misses TensorFlow's symbols.
    standard = [] if any(flag.lstrip("-").startswith("std=") for flag in flags) else ["-std=c++14"]
    return [
        *standard,
        "-shared",
        "-fPIC",
        "-O3",
        "-Wno-deprecated-declarations",
        str(SOURCE),
        "-o",
        output,
        *flags,
        *tf.sysconfig.get_link_flags(),
    ]


def _run(command: list[str], failure: str) -> None:
    """Run ``command``; on failure raise one error with its last lines of output."""
    try:
        done = subprocess.run(  # noqa: S603 - our own compiler and check commands, no shell
            command, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KernelBuildError(f"{failure}: {exc}") from exc
    if done.returncode != 0:
        raise KernelBuildError(f"{failure} (exit status {done.returncode}):\n{_what_went_wrong(done)}")


def _what_went_wrong(done: subprocess.CompletedProcess[str]) -> str:
    """The lines that say it: a compiler's ``error:`` lines, else what the command printed last.

    The check prints its finding on stdout (TensorFlow's start-up logs go to stderr); a crash prints
    nothing there, so stderr's last lines stand in.
    """
    printed = (done.stdout + "\n" + done.stderr).splitlines()
    errors = [line for line in printed if ": error:" in line or line.startswith("error:")]
    lines = errors or done.stdout.strip().splitlines() or done.stderr.strip().splitlines()
    return "\n".join(lines[-12:])


@functools.lru_cache(maxsize=1)
def _build_key() -> str:
    """What a built library depends on: this source, the TensorFlow build it links, the machine."""
    tf = require_tensorflow("the rounding kernel")
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), CHECK.read_bytes()):
        digest.update(part)
    compile_flags, link_flags = tf.sysconfig.get_compile_flags(), tf.sysconfig.get_link_flags()
    facts: list[Any] = [tf.__version__, platform.machine(), *compile_flags, *link_flags, *_framework_stat(link_flags)]
    digest.update(repr(facts).encode())
    return f"tf{tf.__version__}-{digest.hexdigest()[:16]}"


def _framework_stat(link_flags: list[str]) -> list[int]:
    """Size and modification time of the TensorFlow framework library the link flags name."""
    folders = [flag[2:] for flag in link_flags if flag.startswith("-L")]
    names = [flag[3:] for flag in link_flags if flag.startswith("-l:")]
    for folder in folders:
        for name in names:
            try:
                stat = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            return [stat.st_size, stat.st_mtime_ns]
    return []


__all__ = ["CHECK_OP_TYPE", "OP_TYPE", "KernelBuildError", "build", "cache_dir", "in_use", "library_path", "status"]
