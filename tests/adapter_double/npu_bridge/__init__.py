"""Test double of the Ascend adapter's ``npu_bridge`` package (see ../README.md)."""
