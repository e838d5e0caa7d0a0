"""How long reading a GE graph dump takes, as a ratio to reading the same bytes as plain lines.

Builds a synthetic ``ge_proto_*_Build.txt`` in the ge_ir.proto text format with N ops (default 7000,
a large training graph), then times ``read_ge_dump`` against a same-run baseline (reading the file
and splitting it into lines). Measured on this CPU; prints ratios, never asserts.

    python bench/ge_dump_bench.py [N]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from npu_jupyter._runtime.ascend.ge_dump import read_ge_dump

OP = """  op {{
    name: "layer{i}/MatMul"
    type: "MatMulV2"
    input: "layer{p}/MatMul:0"
    attr {{
      key: "_ge_attr_op_kernel_lib_name"
      value {{
        s: "AIcoreEngine"
      }}
    }}
    input_desc {{
      dtype: DT_FLOAT16
      shape {{
        dim: 32
        dim: 1024
      }}
      layout: "ND"
    }}
    output_desc {{
      dtype: DT_FLOAT16
      shape {{
        dim: 32
        dim: 1024
      }}
      layout: "ND"
    }}
  }}
"""


def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ge_proto_00000001_Build.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write('name: "bench"\ngraph {\n  name: "g"\n')
            handle.writelines(OP.format(i=i, p=max(i - 1, 0)) for i in range(count))
            handle.write("}\n")
        size_mb = os.path.getsize(path) / 1e6
        start = time.perf_counter()
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        baseline = time.perf_counter() - start
        start = time.perf_counter()
        [graph] = read_ge_dump(path)
        reader = time.perf_counter() - start
        assert len(graph.ops) == count and len(lines) > count
        print(f"{count} ops, {size_mb:.1f} MB dump (measured on this CPU)")
        print(
            f"read_ge_dump: {reader * 1000:.0f} ms; baseline read+splitlines: {baseline * 1000:.1f} ms; "
            f"ratio {reader / max(baseline, 1e-9):.0f}x; {size_mb / reader:.1f} MB/s"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7000)
