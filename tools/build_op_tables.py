#!/usr/bin/env python3
"""Build the bundled op capability tables ``npu_jupyter/_ops/ascend910.json`` and ``ascend910b.json``.

Inputs (both JSON, nothing else, so the output is reproducible byte for byte):

* ``ascend_op_data.json`` -- public Ascend lists extracted for this project (TF->Ascend IR parser map,
  AI Core op-info allow/deny/heavy lists and the ascend910 dtype table, AI CPU kernel lists, fe.ini's
  cube list, the adapter's dataset lists). Default: ``tools/data/ascend_op_data.json`` (shipped; its
  ``sources`` entry names the public repositories the lists were read from).
* ``npu_jupyter/_ops/table_sources.json`` -- the hand-curated facts those lists lack (graph plumbing
  GE executes itself, host-only TF op types, the isGray approximation rules, dtype fallbacks), each
  with its source.

Why a build step instead of reading the raw lists at runtime: the planner asks "what can the device
do with TF op type X" thousands of times per graph; answering from one precomputed row per TF type
keeps it a dict lookup, and the derivation (IR mapping, const-attr ``D`` variants, fallbacks) is
written down once, here, where a reviewer can audit it.

Usage: ``python tools/build_op_tables.py [DATA_JSON] [--out DIR]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "tools" / "data" / "ascend_op_data.json"
SOURCES = REPO / "npu_jupyter" / "_ops" / "table_sources.json"
FORMAT = "npu_jupyter.op_table/1"

# One entry per bundled table: which op-info snapshot gives its allow/deny/heavy lists.
SOCS: dict[str, dict[str, str]] = {
    "ascend910": {
        "soc": "Ascend910",
        "ops_info": "ascend910@canndev-2022-06(stp)",
        "cube_dtypes": "cube_ascend910",
        "label": "Atlas training series (Ascend 910 / 910A / 910ProA / 910ProB / 910PremiumA)",
    },
    "ascend910b": {
        "soc": "Ascend910B",
        "ops_info": "ascend910b@canndev-2022-06(stp)",
        "cube_dtypes": "cube_ascend910b",
        "label": "Atlas A2 training series (Ascend 910B, 910B1-910B4)",
    },
}

_FLOAT_NAMES = {"float16": "float16", "float": "float32", "float32": "float32", "bfloat16": "bfloat16"}


class SocLists:
    """The per-SoC lists a row is derived from, precomputed as sets."""

    def __init__(self, data: dict[str, Any], sources: dict[str, Any], key: str) -> None:
        cfg = SOCS[key]
        info = data["aicore_ops_info"][cfg["ops_info"]]
        self.key = key
        self.cfg = cfg
        self.allow = set(info["precision_reduce_true_allowlist"])
        self.deny = set(info["precision_reduce_false_denylist"])
        self.heavy = set(info["heavyOp_true"])
        self.dtype_table: dict[str, Any] = data["ascend910_aicore_dtype_table"]
        # Only ascend910's full op-info op list is public; for other SoCs its membership stands in,
        # extended by every op their own lists name (documented in the provenance block).
        self.aicore = set(self.dtype_table) | self.allow | self.deny | self.heavy
        self.cube_dtypes = sorted(sources["dtype_fallbacks"][cfg["cube_dtypes"]])
        self.cube_source = sources["dtype_fallbacks"][cfg["cube_dtypes"] + "_source"]

    def flag(self, ir: str) -> str:
        """precision_reduce flag of an IR type: true/false/gray, or absent when not an AI Core op."""
        if ir in self.allow:
            return "true"
        if ir in self.deny:
            return "false"
        return "gray" if ir in self.aicore else "absent"


def _policy(flag: str) -> str:
    return {"true": "white", "false": "black"}.get(flag, "gray")


def _floats(dtypes_by_input: dict[str, list[str]]) -> list[str]:
    """Float dtypes of the first tensor that takes floats at all (the data input).

    Not the union over inputs: bias/scale inputs are float32 even on kernels whose feature maps are
    float16 only (DepthwiseConv2D, Conv3D), and the data input is what precision modes act on.
    """
    for index in sorted(dtypes_by_input, key=int):
        floats = {_FLOAT_NAMES[d] for d in dtypes_by_input[index] if d in _FLOAT_NAMES}
        if floats:
            return sorted(floats)
    return []


class RowBuilder:
    """Derives one table row per TF op type for one SoC."""

    def __init__(self, data: dict[str, Any], sources: dict[str, Any], soc: SocLists) -> None:
        self.soc = soc
        self.tf_to_ge: dict[str, list[str]] = data["tf_to_ge_optype"]
        self.tf_kernel = set(data["aicpu_tfkernel_tf_optypes_2020"])
        self.aicpu = set(data["aicpu_kernel_optypes_2022"])
        self.host_cpu = set(data["host_cpu_kernel_optypes_2022"])
        self.cube_types = set(data["fe_ini_fp16_op_type"])
        self.stub = set(data["adapter_test_stub_npu_supported_ops"])
        self.dataset_blacklist = set(data["dataset_function_ge_unsupported_ops"])
        self.parser_plumbing: dict[str, str] = sources["ge_parser_plumbing"]["types"]
        self.adapter_plumbing = set(sources["adapter_plumbing"]["types"])
        self.graph_passes: dict[str, str] = sources["ge_graph_passes"]["types"]
        self.control_flow = set(sources["ge_control_flow"]["types"])
        self.function_calls = set(sources["function_call_types"])
        self.host_only: dict[str, str] = sources["host_only"]["types"]
        self.fusions: dict[str, dict[str, str]] = sources["ge_fusion"]["types"]
        self.src = sources
        fallbacks = sources["dtype_fallbacks"]
        self.fallbacks = {k: sorted(v) for k, v in fallbacks.items() if isinstance(v, list)}
        gray = sources["gray_in_mix_rules"]
        self.gray_rules = [(name, re.compile(pattern)) for name, pattern in gray["categories"]]
        self.gray_exempt = set(gray["exempt"]["types"])

    # -- which TF op types get a row ------------------------------------------------------------

    def tf_types(self) -> list[str]:
        """Every TF op type the device declares (inferred) plus the curated host-only ones.

        tf_kernel.ini names some ops by their Ascend IR type (ReduceSum, SoftmaxV2); a name that
        is an IR target of the parser map and not itself a TF key is skipped as not a TF op type.
        """
        ir_targets = {ir for irs in self.tf_to_ge.values() for ir in irs}
        tf_kernel_tf = {t for t in self.tf_kernel if t in self.tf_to_ge or t not in ir_targets}
        declared = (
            set(self.tf_to_ge)
            | tf_kernel_tf
            | self.stub
            | set(self.parser_plumbing)
            | set(self.graph_passes)
            | self.adapter_plumbing
            | self.control_flow
        )
        clash = sorted(declared & set(self.host_only))
        if clash:
            raise SystemExit(f"table_sources.json lists as host-only op types the data declares: {clash}")
        return sorted(declared | set(self.host_only))

    # -- one row -----------------------------------------------------------------------------------

    def row(self, tf_type: str) -> dict[str, Any]:
        if tf_type in self.host_only:
            return self._host_row(tf_type)
        irs = self.tf_to_ge.get(tf_type) or [tf_type]
        aicore_ir = self._aicore_ir(irs)
        ir = next((i for i in irs if aicore_ir in (i, i + "D")), irs[0])
        fusion = self.fusions.get(tf_type) if aicore_ir is None else None
        if fusion is not None:
            aicore_ir = fusion["fused_into"]
        declared_by = self._declared_by(tf_type)
        engine, kernel, engine_src = self._engine(tf_type, ir, aicore_ir)
        if fusion is not None:
            kernel = "aicore_fused"
            engine_src = f"engine: AI Core after GE fusion into {aicore_ir} ({fusion['pass']})"
        aicore_dtypes, dtype_src = self._aicore_dtypes(aicore_ir, kernel)
        has_aicpu = engine == "AI_CPU" or self._has_aicpu(tf_type, ir)
        aicpu_dtypes = self.fallbacks["aicpu"] if has_aicpu else []
        flag = self.soc.flag(ir)
        policy_ir = ir
        if flag == "absent" and aicore_ir is not None and self.soc.flag(aicore_ir) != "absent":
            flag, policy_ir = self.soc.flag(aicore_ir), aicore_ir  # the D variant or the fused op
        gray_reason = self._gray_reason(tf_type)
        cube_ir = aicore_ir or ir
        row = {
            "ir_type": ir,
            "engine": engine,
            "kernel": kernel,
            "declared": True,
            "aicore_dtypes": aicore_dtypes,
            "aicpu_dtypes": aicpu_dtypes,
            "cube": ir in self.cube_types or cube_ir in self.cube_types,
            "policy": _policy(flag),
            "gray_in_mix": gray_reason is not None,
            "heavy": ir in self.soc.heavy or cube_ir in self.soc.heavy,
            "source": "; ".join(
                s
                for s in (
                    declared_by,
                    engine_src,
                    dtype_src,
                    f"policy: precision_reduce of {policy_ir} ({flag}) in {self.soc.cfg['ops_info']}",
                    f"gray_in_mix: APPROXIMATION ({gray_reason})" if gray_reason else "",
                )
                if s
            ),
        }
        if aicore_ir is not None and aicore_ir != ir:
            row["aicore_ir_type"] = aicore_ir
        if gray_reason:
            row["gray_reason"] = gray_reason
        return row

    def _host_row(self, tf_type: str) -> dict[str, Any]:
        return {
            "ir_type": tf_type,
            "engine": "HOST",
            "kernel": "host",
            "declared": False,
            "aicore_dtypes": [],
            "aicpu_dtypes": [],
            "cube": False,
            "policy": "gray",
            "gray_in_mix": False,
            "heavy": False,
            "source": f"host only: {self.host_only[tf_type]} (table_sources.json host_only)",
        }

    def _aicore_ir(self, irs: list[str]) -> str | None:
        """The IR type whose AI Core op-info entry applies (the const-attr ``D`` variant if only it has one)."""
        for ir in irs:
            for candidate in (ir, ir + "D"):
                if candidate in self.soc.aicore:
                    return candidate
        return None

    def _declared_by(self, tf_type: str) -> str:
        if tf_type in self.tf_to_ge:
            return "declared: TF->Ascend parser plugin (tf_to_ge_optype, canndev framework/tf_plugin 2022-06)"
        if tf_type in self.parser_plumbing:
            kind = self.parser_plumbing[tf_type]
            return f"declared: GE built-in parser Ascend/parser parser/tensorflow/tensorflow_{kind}_parser.cc"
        if tf_type in self.graph_passes:
            return f"{self.src['ge_graph_passes']['source']}: {self.graph_passes[tf_type]}"
        if tf_type in self.tf_kernel:
            return "declared: AI CPU TF kernel (tf_kernel.ini 2020)"
        if tf_type in self.stub:
            return "declared: adapter unit-test npu_supported_ops.json stub"
        if tf_type in self.control_flow:
            return "declared: " + self.src["ge_control_flow"]["source"]
        return "declared: " + self.src["adapter_plumbing"]["source"]

    def _has_aicpu(self, tf_type: str, ir: str) -> bool:
        return tf_type in self.tf_kernel or ir in self.tf_kernel or ir in self.aicpu or ir in self.host_cpu

    def _engine(self, tf_type: str, ir: str, aicore_ir: str | None) -> tuple[str, str, str]:
        """Engine, kernel kind and the reason, in the order GE's engine choice implies."""
        info = self.soc.cfg["ops_info"]
        if aicore_ir is not None:
            return "AI_CORE", "aicore", f"engine: AI Core op-info entry {aicore_ir} ({info})"
        if tf_type in self.function_calls:
            return "AI_CORE", "function_call", "engine: function call, runs where its body runs"
        if (
            tf_type in self.parser_plumbing
            or tf_type in self.graph_passes
            or (not self._has_aicpu(tf_type, ir) and (tf_type in self.adapter_plumbing or tf_type in self.control_flow))
        ):
            return "AI_CORE", "ge", "engine: executed by GE itself on the device stream (no compute kernel)"
        if tf_type in self.tf_kernel or ir in self.tf_kernel:
            return "AI_CPU", "aicpu_tf", "engine: AI CPU TF kernel (tf_kernel.ini 2020)"
        if ir in self.aicpu:
            return "AI_CPU", "aicpu", "engine: AI CPU kernel (aicpu_kernel.ini 2022-06)"
        if ir in self.host_cpu:
            return "AI_CPU", "host_cpu", "engine: GE host-CPU kernel (host_cpu_kernel.ini 2022-06)"
        return (
            "AI_CPU",
            "aicpu_inferred",
            (
                "engine: INFERRED AI CPU (declared, but no AI Core op-info entry; the 2022 AI Core op-info is "
                "the complete public AI Core list)"
            ),
        )

    def _aicore_dtypes(self, aicore_ir: str | None, kernel: str) -> tuple[list[str], str]:
        if kernel in ("ge", "function_call"):
            return self.fallbacks["passthrough"], "dtypes: " + self.src["dtype_fallbacks"]["passthrough_source"]
        if aicore_ir is None:
            return [], ""
        if aicore_ir in self.cube_types and (
            self.soc.key != "ascend910" or not self.soc.dtype_table.get(aicore_ir, {}).get("input_dtypes")
        ):
            return self.soc.cube_dtypes, "dtypes: " + self.soc.cube_source
        entry = self.soc.dtype_table.get(aicore_ir)
        if entry and entry["input_dtypes"]:
            floats = _floats(entry["input_dtypes"]) or _floats(entry["output_dtypes"])
            where = "" if self.soc.key == "ascend910" else " (ascend910 table; no public ascend910b dtype table)"
            return floats, f"dtypes: ascend910_aicore_dtype_table data input of {aicore_ir}{where}"
        return self.fallbacks["unknown_aicore"], "dtypes: FALLBACK " + self.src["dtype_fallbacks"][
            "unknown_aicore_source"
        ]

    def _gray_reason(self, tf_type: str) -> str | None:
        if tf_type in self.gray_exempt:
            return None
        if tf_type in self.dataset_blacklist:
            return "in the adapter's GE-unsupported dataset-function list"
        for name, pattern in self.gray_rules:
            if pattern.search(tf_type):
                return f"{name} op"
        return None


def _provenance(soc: SocLists, data_sha: str, sources_sha: str, sources: dict[str, Any]) -> dict[str, Any]:
    info = soc.cfg["ops_info"]
    return {
        "summary": (
            f"Op capabilities of {soc.cfg['soc']} ({soc.cfg['label']}) per TensorFlow op type, built by "
            "tools/build_op_tables.py from public Ascend lists (tools/data/ascend_op_data.json, which names the "
            "public repositories they were read from) and npu_jupyter/_ops/table_sources.json. With a CANN "
            "install (ASCEND_OPP_PATH) npu_jupyter reads the real npu_supported_ops.json and "
            f"aic-{soc.key}-ops-info.json instead."
        ),
        "host_kept_list": (
            sources["gray_in_mix_rules"]["source"]
            + " Categories: "
            + ", ".join(sorted({name for name, _ in sources["gray_in_mix_rules"]["categories"]}))
            + ". Override with load_library(host_ops=...) or the NPU_JUPYTER_HOST_OPS environment variable "
            '(a JSON file: a list of op types to add, or {"add": [...], "remove": [...], "replace": [...]}).'
        ),
        "declared_list": (
            "APPROXIMATION: npu_supported_ops.json itself is not public. A TF op type counts as declared "
            "when it has a TF->Ascend parser plugin (tf_to_ge_optype, 828 types), an AI CPU TF kernel "
            "(aicpu_tfkernel_tf_optypes_2020), is in the adapter's unit-test stub, or is graph plumbing "
            "curated in table_sources.json with its source. Types marked engine HOST are curated host-only "
            "types (py_func, tf.data, checkpoints, summaries); types absent from the table are undeclared."
        ),
        "columns": {
            "ir_type": "tf_to_ge_optype (REGISTER_CUSTOM_OP ... OriginOpType in canndev framework/tf_plugin, "
            "2022-06); the TF name itself for plumbing without a plugin",
            "engine": f"AI_CORE when the IR type (or its const-attr D variant, aicore_ir_type) has an AI Core "
            f"op-info entry ({info}); AI_CORE/kernel=aicore_fused for types a GE fusion pass rewrites into AI Core "
            "ops (table_sources.json ge_fusion); AI_CORE/kernel=ge for plumbing GE executes itself; AI_CPU when in "
            "aicpu_tfkernel_tf_optypes_2020, aicpu_kernel_optypes_2022 or host_cpu_kernel_optypes_2022 "
            "(kernel says which), or INFERRED AI_CPU (kernel=aicpu_inferred) for declared types with no "
            "listed kernel; HOST for curated host-only types",
            "aicore_dtypes": "float dtypes of the first float-taking (data) input in ascend910_aicore_dtype_table "
            "(float = float32); cube ops "
            "with dynamicFormat: dtype_fallbacks cube_* (ascend910: float16 only, ADAPTER-FACTS 4.6); other "
            "ops without static dtypes: FALLBACK float16+float32 (ADAPTER-FACTS 4.2)"
            + (
                ""
                if soc.key == "ascend910"
                else "; no public ascend910b dtype table exists, so non-cube "
                "ops use the ascend910 table (APPROXIMATION)"
            ),
            "aicpu_dtypes": "ASSUMED float16+float32 for types with an AI CPU kernel (the lists carry no dtypes)",
            "cube": "IR type in fe.ini fp16.op_type (fe_ini_fp16_op_type, hicann/ge)",
            "policy": f"precision_reduce flag of the IR type in aicore_ops_info[{info}]: true=white, "
            "false=black, absent=gray; when the IR type has no op-info entry its D variant's flag is used",
            "gray_in_mix": "APPROXIMATION, see host_kept_list",
            "heavy": f"IR type in heavyOp_true of aicore_ops_info[{info}] (stands in for isHeavy)",
            "source": "per-row derivation of the columns above",
        },
        "dtype_fallbacks": "dtypes used when a CANN ops-info entry lists none: cube (dynamicFormat cube ops), "
        "unknown_aicore (other dynamicFormat ops), aicpu (any AI CPU kernel); sources in table_sources.json",
        "mixed_precision": (
            f"mixed_precision_white / mixed_precision_black: IR types with precision_reduce true / false in "
            f"{info}; every other name in ir_types is gray. modify_mixlist files name these IR types."
        ),
        "inputs_sha256": {"ascend_op_data.json": data_sha, "table_sources.json": sources_sha},
    }


def build_table(data: dict[str, Any], sources: dict[str, Any], key: str, data_sha: str, sources_sha: str) -> dict:
    """The complete table for one SoC (pure: same inputs, same dict)."""
    soc = SocLists(data, sources, key)
    rows = RowBuilder(data, sources, soc)
    ops = {t: rows.row(t) for t in rows.tf_types()}
    ir_types = soc.aicore | {ir for irs in data["tf_to_ge_optype"].values() for ir in irs}
    engines = [r["engine"] for r in ops.values()]
    return {
        "format": FORMAT,
        "soc": soc.cfg["soc"],
        "approximate": True,
        "provenance": _provenance(soc, data_sha, sources_sha, sources),
        "counts": {
            "tf_types": len(ops),
            "ai_core": engines.count("AI_CORE"),
            "ai_cpu": engines.count("AI_CPU"),
            "host": engines.count("HOST"),
            "gray_in_mix": sum(r["gray_in_mix"] for r in ops.values()),
            "ir_types": len(ir_types),
        },
        "dtype_fallbacks": {
            "cube": soc.cube_dtypes,
            "unknown_aicore": sorted(sources["dtype_fallbacks"]["unknown_aicore"]),
            "aicpu": sorted(sources["dtype_fallbacks"]["aicpu"]),
        },
        "mixed_precision_white": sorted(soc.allow),
        "mixed_precision_black": sorted(soc.deny),
        "ir_types": sorted(ir_types),
        "ops": ops,
    }


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the tables are package data
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_TOP_ORDER = (
    "provenance",
    "format",
    "soc",
    "approximate",
    "counts",
    "dtype_fallbacks",
    "mixed_precision_white",
    "mixed_precision_black",
    "ir_types",
    "ops",
)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def render(table: dict[str, Any]) -> str:
    """Deterministic text: the provenance block first, every nested object key-sorted, newline-terminated."""
    ordered = {key: _sorted(table[key]) for key in _TOP_ORDER}
    return json.dumps(ordered, indent=1, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="ascend_op_data.json")
    parser.add_argument("--sources", default=str(SOURCES), help="curated table_sources.json")
    parser.add_argument("--out", default=str(SOURCES.parent), help="output directory")
    args = parser.parse_args(argv)
    data_bytes = Path(args.data).read_bytes()
    sources_bytes = Path(args.sources).read_bytes()
    data = json.loads(data_bytes)
    sources = json.loads(sources_bytes)
    data_sha = hashlib.sha256(data_bytes).hexdigest()
    sources_sha = hashlib.sha256(sources_bytes).hexdigest()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for key in SOCS:
        table = build_table(data, sources, key, data_sha, sources_sha)
        _write_atomic(out / f"{key}.json", render(table))
        print(f"{key}.json: {table['counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
