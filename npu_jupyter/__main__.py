"""``python -m npu_jupyter <command>``: the package's command line (``zoo``, ``build-kernel``)."""

from __future__ import annotations

import sys

USAGE = (
    "usage: python -m npu_jupyter zoo ENTRY [ENTRY ...] [--modes a,b,c] [options]\n"
    "       python -m npu_jupyter build-kernel [--force]\n"
    "  zoo           run training entries across precision modes, one process per task (--help for more)\n"
    "  build-kernel  compile and check the emulator's one-node rounding op for this TensorFlow (needs g++)"
)


def main(argv: list[str] | None = None) -> int:
    """Dispatch to the command named first; usage on anything else."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "zoo":
        from npu_jupyter._zoo_check.cli import main as zoo_main

        return zoo_main(args[1:])
    if args and args[0] == "build-kernel":
        return build_kernel(args[1:])
    print(USAGE, file=sys.stderr)  # noqa: T201 - the command line's usage
    return 2


def build_kernel(args: list[str]) -> int:
    """Build the rounding kernel (:mod:`npu_jupyter._runtime.round_kernel`); 0 when built or already there."""
    import argparse
    import time

    parser = argparse.ArgumentParser(
        prog="python -m npu_jupyter build-kernel",
        description="Compile the emulator's NpuEmuRound op against this TensorFlow, check it against "
        "TensorFlow's Cast pair in a separate process, and install it in the cache.",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when a checked library is installed")
    options = parser.parse_args(args)
    from npu_jupyter._runtime import round_kernel
    from npu_jupyter._tensorflow_import import TensorFlowMissingError

    start = time.perf_counter()
    try:
        there = round_kernel.library_path().is_file() and not options.force
        path = round_kernel.build(force=options.force)
    except (round_kernel.KernelBuildError, TensorFlowMissingError) as exc:
        print(f"npu_jupyter build-kernel: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    done = "already built" if there else f"built and checked in {time.perf_counter() - start:.1f} s"
    print(f"rounding kernel ready: {path} ({done})")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
