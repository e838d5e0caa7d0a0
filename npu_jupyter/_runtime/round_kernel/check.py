"""Check a freshly built rounding library against TensorFlow's Cast pair, in a process of its own.

Run by :func:`npu_jupyter._runtime.round_kernel.build` as ``python check.py LIBRARY``
before the library is installed: a library that crashes on load takes this process down, not the
user's kernel, and one whose values differ from the Cast pair by a single bit is refused. It imports
only NumPy and TensorFlow, so it runs wherever the kernel's TensorFlow runs. Exit status 0 and "ok"
when every check passed; otherwise the first difference and status 1. ``NpuEmuCheck`` is checked on
finite values (large ones included: it must not overflow like a sum) and on an inf or NaN at each end
and in the middle, in each dtype it takes.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._tf_types import DType, Tensor


def _values() -> np.ndarray:
    """float32 test values: random bit patterns, and the neighbourhood of every float16 value and tie."""
    rng = np.random.default_rng(20261127)
    random = rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32)
    halves = np.arange(0, 0x7C01, dtype=np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    # float16 keeps 10 of float32's 23 fraction bits: a tie sits 4096 float32 ulps above a float16 value.
    offsets = np.array([-4097, -4096, -4095, -1, 0, 1, 4095, 4096, 4097, 8191, 8192], np.int64)
    near = (halves[:, None].astype(np.int64) + offsets[None, :]).clip(0, 0x7FFFFFFF).astype(np.uint32).ravel()
    # inf, NaNs, float32's largest, around float16's largest and overflow line, float16's smallest
    # subnormal and its ties, float16's smallest normal, float32 subnormals, a bfloat16 tie.
    special = np.array(
        [
            0x7F800000,
            0x7F800001,
            0x7FC00000,
            0x7F7FFFFF,
            0x477FE000,
            0x477FEFFF,
            0x477FF000,
            0x477FF001,
            0x33000000,
            0x33000001,
            0x337FFFFF,
            0x387FC000,
            0x38800000,
            0x00000001,
            0x00800000,
            0x3F808000,
        ],
        np.uint32,
    )
    everything = np.concatenate([random, near, special])
    return np.concatenate([everything, everything | np.uint32(0x80000000)]).view(np.float32)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bit-equal, or NaN on both sides (a NaN's payload is not a value)."""
    same: np.ndarray = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
    return same


def _roundings(
    library: ModuleType, tf: ModuleType, values: np.ndarray, dtype: DType
) -> list[tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]]:
    """``NpuEmuRound`` and the Cast pair on ``values`` in the op's two writing paths, as
    (form, (rounded, expected, check, read check)).

    A tensor the caller still holds cannot be overwritten, so the op writes a copy (with non-temporal
    stores past 1 MiB, as for a weight read from its variable); a tensor only the rounding reads, as
    inside a function, is rounded in place. A ``concat`` makes such a tensor: a fresh buffer holding
    the same bits (plus a zero, so its length is odd), which no graph optimization folds away; its
    rounding is compared with the copy's Cast pair, since the bits are the same.
    """
    held = tf.constant(values)
    copy = [t.numpy() for t in library.npu_emu_round(held, to=dtype)]
    expected = tf.cast(tf.cast(held, dtype), tf.float32).numpy()

    def in_place(x: Tensor) -> list[Tensor]:
        rounded: list[Tensor] = library.npu_emu_round(tf.concat([x, tf.zeros([1])], axis=0), to=dtype)
        return rounded  # the concat's only reader

    rounded, check, read_check = (t.numpy() for t in tf.function(in_place)(held))
    return [
        ("a copy", (copy[0], expected, copy[1], copy[2])),
        ("in place", (rounded[:-1], expected, check, read_check)),
    ]


def _round_checks(library: ModuleType, dtype: DType) -> str:
    """What is wrong with ``NpuEmuRound``'s two checks ("" when nothing), at sizes around its 8-wide
    vector loop and one large enough to be split across threads: 0 for finite values, NaN for an inf or
    NaN at either end, and a value that overflows only when rounded marks the rounded check alone.
    """
    largest = 70000.0 if dtype.name == "float16" else 3.4e38  # finite in float32, inf once rounded
    for size in (1, 7, 8, 9, 17, 3_000_001):
        finite = np.linspace(-60000, 60000, size, dtype=np.float32)
        checks = [t.numpy() for t in library.npu_emu_round(finite, to=dtype)[1:]]
        if checks != [0, 0]:
            return f"{dtype.name}: checks are {checks} for {size} finite values"
        for position, bad in ((0, np.nan), (size - 1, np.inf)):
            spoiled = finite.copy()
            spoiled[position] = bad
            if not all(np.isnan(t.numpy()) for t in library.npu_emu_round(spoiled, to=dtype)[1:]):
                return f"{dtype.name}: a check misses {bad} at {position} of {size} values"
        grown = finite.copy()
        grown[-1] = largest
        checks = [t.numpy() for t in library.npu_emu_round(grown, to=dtype)[1:]]
        if not (np.isnan(checks[0]) and checks[1] == 0):
            return f"{dtype.name}: checks are {checks} when only the rounding of {largest} overflows"
    return ""


def _check_op(library: ModuleType, tf: ModuleType) -> str:
    """What is wrong with ``NpuEmuCheck`` ("" when nothing): 0 for finite values, NaN for any inf/NaN."""
    rng = np.random.default_rng(7)
    for dtype in ("float32", "float16", "bfloat16", "float64"):
        for size in (0, 1, 7, 8, 9, 33, 3_000_001):
            values = rng.standard_normal(size).astype(np.float32)
            if dtype == "float32":
                values[: size // 2] = np.clip(values[: size // 2], -3, 3) * 1e38  # a sum would overflow
            if library.npu_emu_check(tf.cast(values, dtype)).numpy() != 0:
                return f"NpuEmuCheck: not 0 for {size} finite {dtype} values"
            for position in sorted({0, size // 2, size - 1} if size else set()):
                for bad in (np.inf, -np.inf, np.nan):
                    spoiled = values.copy()
                    spoiled[position] = bad
                    if not np.isnan(library.npu_emu_check(tf.cast(spoiled, dtype)).numpy()):
                        return f"NpuEmuCheck: misses {bad} at {position} of {size} {dtype} values"
    return ""


def main(path: str) -> int:
    import tensorflow as tf

    library = tf.load_op_library(path)
    values = _values()
    for dtype in (tf.float16, tf.bfloat16):
        for form, (rounded, expected, check, read_check) in _roundings(library, tf, values, dtype):
            wrong = np.flatnonzero(~_same(rounded, expected))
            if wrong.size:
                k = wrong[0]
                print(  # noqa: T201 - the check's answer
                    f"{dtype.name} ({form}): {wrong.size} values differ from the Cast pair, first "
                    f"0x{values.view(np.uint32)[k]:08x} -> {rounded[k]!r}, Cast gives {expected[k]!r}"
                )
                return 1
            if not (np.isnan(check) and np.isnan(read_check)):
                print(  # noqa: T201
                    f"{dtype.name} ({form}): checks are {check!r}, {read_check!r} for values that include inf/NaN"
                )
                return 1
        problem = _round_checks(library, dtype)
        if problem:
            print(problem)  # noqa: T201
            return 1
    problem = _check_op(library, tf)
    if problem:
        print(problem)  # noqa: T201
        return 1
    print("ok")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
