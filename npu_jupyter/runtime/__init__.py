"""Running graphs: the CPU emulator and Ascend backends, dumps, profiles, comparisons and sweeps."""
