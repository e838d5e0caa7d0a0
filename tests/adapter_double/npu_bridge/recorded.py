"""What the double was handed, in call order (tests read and clear these lists)."""

from __future__ import annotations

from typing import Any

# deterministic serialisation of every ConfigProto a tf Session received, as handed in
session_configs: list[bytes] = []
# keyword arguments of every NPURunConfig(...) call
run_configs: list[dict] = []
# every npu_device.global_options() / open() call, as (name, snapshot dict)
device_calls: list[Any] = []
# the Session.__init__ the double wrapped (restored by the fixture)
original_session_init: Any = None


def clear() -> None:
    """Forget everything recorded (the fixture calls this before each test)."""
    del session_configs[:]
    del run_configs[:]
    del device_calls[:]
