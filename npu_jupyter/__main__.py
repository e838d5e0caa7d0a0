"""``python -m npu_jupyter <command>``: the package's command line (today: ``zoo``)."""

from __future__ import annotations

import sys

COMMANDS = ("zoo",)


def main(argv: list[str] | None = None) -> int:
    """Dispatch to the command named first; usage on anything else."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        print(  # noqa: T201 - the command line's usage
            "usage: python -m npu_jupyter zoo ENTRY [ENTRY ...] [--modes a,b,c] [options]\n"
            "  zoo   run training entries across precision modes, one process per task (--help for more)",
            file=sys.stderr,
        )
        return 2
    from npu_jupyter._zoo_check.cli import main as zoo_main

    return zoo_main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
