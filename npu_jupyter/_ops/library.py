"""Op capability tables: which TF op types the device runs, on which engine, in which dtypes.

The planner asks one question per node -- "what can the device do with this TF op type?" -- so the
answer is a precomputed row per TF op type (``ascend910.json`` / ``ascend910b.json``, built by
``tools/build_op_tables.py`` from public Ascend lists; each file's ``provenance`` block says where
every column comes from). Two parts of that data are approximations because the real lists are not
public: which op types the device declares (``npu_supported_ops.json``) and which of those are kept
on the host in mixed computing (``isGray``). Hence:

* ``load_library(soc, opp_path=...)`` or ``$ASCEND_OPP_PATH`` reads a real CANN install instead and
  reports ``approximate=False`` when both files were found;
* ``load_library(host_ops=...)`` or ``$NPU_JUPYTER_HOST_OPS`` (a JSON file) replaces or extends the
  host-kept list: a JSON list of op types to add, or ``{"add": [...], "remove": [...],
  "replace": [...]}`` (``replace`` first, then ``remove``, then ``add``).

Loading is cached per (SoC, install, override): the JSON is parsed once per process.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from npu_jupyter._ops.cann import AicoreOp, CannData, OpDataError, read_install
from npu_jupyter._ops.host_ops import HostOps, apply_host_ops, host_ops_from
from npu_jupyter._package_data import read_package_text

__all__ = ["SATURATION_SOCS", "SUPPORTED_SOCS", "OpCaps", "OpDataError", "OpLibrary", "load_library", "resolve_soc"]

OPP_ENV = "ASCEND_OPP_PATH"
CUSTOM_OPP_ENV = "ASCEND_CUSTOM_OPP_PATH"

# Table key -> (display name, accepted spellings as regex). The adapter's soc_config values for the
# Atlas training series and Atlas A2 map onto the two bundled tables.
SUPPORTED_SOCS: dict[str, tuple[str, str]] = {
    "ascend910": ("Ascend910", r"ascend910(a|proa|prob|premiuma)?"),
    # Atlas A3 (Ascend910_93xx) has no public table of its own; like Atlas A2 it keeps the original
    # dtype by default, so it is planned with the Ascend910B table (an approximation).
    "ascend910b": ("Ascend910B", r"ascend910b([1-4]|2c|4-1)?|ascend910_93\d*"),
}
#: SoCs (display names) whose floating-point overflow mode is saturation, the only one the Atlas training
#: series has: "when an overflow/underflow occurs during computation, the computation result is saturated
#: to a floating-point extreme value (±MAX)" (the adapter's NPULossScaleOptimizer and set_device_sat_mode
#: docs), and the overflow is recorded in the float-status register. Atlas A2/A3 default to INF/NaN mode.
SATURATION_SOCS = frozenset({"Ascend910"})
_SOC_SPELLINGS = (
    "Ascend910, Ascend910A, Ascend910ProA, Ascend910ProB, Ascend910PremiumA (Atlas training series); "
    "Ascend910B, Ascend910B1, Ascend910B2, Ascend910B2C, Ascend910B3, Ascend910B4 (Atlas A2); "
    "Ascend910_93xx (Atlas A3, planned with the Ascend910B table)"
)


@dataclass(frozen=True)
class OpCaps:
    """What the device can do with one TensorFlow op type.

    engine: "AI_CORE" | "AI_CPU" | "HOST" -- where the device executes it; "HOST" means the device
        cannot run it (not declared in npu_supported_ops.json).
    aicore_dtypes: float dtypes ("float16", "float32", "bfloat16") the AI Core kernel accepts on its
        float (data) input; empty when the op has no AI Core kernel or takes no floats.
    aicpu_dtypes: float dtypes an AI CPU kernel accepts (used for must_keep_origin_dtype fallback).
    cube: the op is in fe.ini's fp16.op_type list (cube unit; float16 first in allow_fp32_to_fp16).
    policy: mixed-precision list of its Ascend IR type: "white" | "black" | "gray".
    gray_in_mix: npu_supported_ops.json's isGray -- kept on the host in mixed computing.
    kernel: finer engine detail -- "aicore", "aicore_fused" (GE fuses it into AI Core ops),
        "aicpu", "aicpu_tf", "host_cpu", "aicpu_inferred",
        "ge" (plumbing GE executes itself), "function_call" (runs where its body runs), "host".
    declared: listed in (our approximation of, or the real) npu_supported_ops.json.
    aicore_ir_type: the IR type whose AI Core entry applies when it differs from ``ir_type`` (GE's
        const-attr "D" variant, e.g. ApplyMomentum -> ApplyMomentumD); "" otherwise.
    gray_reason: why gray_in_mix is set ("string op", "summary op", ...); "" otherwise.
    """

    tf_type: str
    ir_type: str
    engine: str
    aicore_dtypes: frozenset[str]
    aicpu_dtypes: frozenset[str]
    cube: bool
    policy: str
    gray_in_mix: bool
    heavy: bool
    source: str
    kernel: str = ""
    declared: bool = True
    aicore_ir_type: str = ""
    gray_reason: str = ""


class OpLibrary:
    """Capabilities of one SoC. ``caps(tf_type)`` is None for op types the device does not declare
    and the table does not know (curated host-only types have a row with engine "HOST").
    """

    def __init__(
        self,
        soc: str,
        rows: Mapping[str, Mapping[str, Any]],
        *,
        white: Iterable[str],
        black: Iterable[str],
        ir_types: Iterable[str],
        provenance: str,
        approximate: bool,
        host_kept_extra: Iterable[str] = (),
    ) -> None:
        self.soc = soc
        self.provenance = provenance
        self.approximate = approximate
        self._rows = dict(rows)
        self._white = frozenset(white)
        self._black = frozenset(black)
        self._ir_types = frozenset(ir_types) | self._white | self._black
        self._caps: dict[str, OpCaps] = {}
        # Op types named by a host-ops override that have no row: still reported by host_kept.
        self._host_kept_extra = frozenset(host_kept_extra)

    def __repr__(self) -> str:
        kind = "approximate" if self.approximate else "from CANN"
        return f"<OpLibrary {self.soc}: {len(self._rows)} TF op types, {kind}>"

    def __contains__(self, tf_type: object) -> bool:
        return tf_type in self._rows

    @property
    def tf_types(self) -> frozenset[str]:
        """Every TF op type with a row (declared ones and curated host-only ones)."""
        return frozenset(self._rows)

    @property
    def host_kept(self) -> frozenset[str]:
        """Op types kept on the host in mixed computing (isGray), after any override."""
        return frozenset(t for t, r in self._rows.items() if r["gray_in_mix"]) | self._host_kept_extra

    @property
    def mixed_precision_white(self) -> frozenset[str]:
        """IR op types on the mixed-precision white list (computed in float16 when allowed)."""
        return self._white

    @property
    def mixed_precision_black(self) -> frozenset[str]:
        """IR op types on the mixed-precision black list (kept in float32)."""
        return self._black

    def caps(self, tf_type: str) -> OpCaps | None:
        """What the device can do with the TensorFlow op ``tf_type`` (None when the op is unknown)."""
        cached = self._caps.get(tf_type)
        if cached is not None:
            return cached
        row = self._rows.get(tf_type)
        if row is None:
            return None
        caps = OpCaps(
            tf_type=tf_type,
            ir_type=row["ir_type"],
            engine=row["engine"],
            aicore_dtypes=frozenset(row["aicore_dtypes"]),
            aicpu_dtypes=frozenset(row["aicpu_dtypes"]),
            cube=row["cube"],
            policy=row["policy"],
            gray_in_mix=row["gray_in_mix"],
            heavy=row["heavy"],
            source=row["source"],
            kernel=row.get("kernel", ""),
            declared=row.get("declared", True),
            aicore_ir_type=row.get("aicore_ir_type", ""),
            gray_reason=row.get("gray_reason", ""),
        )
        self._caps[tf_type] = caps
        return caps

    def ir_type(self, name: str) -> str | None:
        """Ascend IR type for a TF op type or an IR name; None when it matches neither.

        A known IR name wins over a TF type of the same spelling (modify_mixlist files name IR
        types, and GE matches them literally): ``ir_type("MatMul")`` is ``"MatMul"``, while the TF
        op MatMul becomes MatMulV2 -- use ``caps("MatMul").ir_type`` for the TF reading.
        Undeclared (host-only) TF types have no IR type.
        """
        if name in self._ir_types:
            return name
        row = self._rows.get(name)
        if row is None or not row.get("declared", True):
            return None
        return cast("str | None", row["ir_type"])

    def policy_of_ir(self, ir_type: str) -> str:
        """Mixed-precision list of an Ascend IR type: "white", "black", else "gray" (the default list)."""
        if ir_type in self._white:
            return "white"
        if ir_type in self._black:
            return "black"
        return "gray"


# --------------------------------------------------------------------------------------------------
# SoC names
# --------------------------------------------------------------------------------------------------


def resolve_soc(soc: str) -> str:
    """Table key ("ascend910" / "ascend910b") for an adapter soc_config spelling, case-insensitive."""
    if not isinstance(soc, str):
        raise ValueError(f"soc must be a string such as 'Ascend910', got {soc!r}")
    name = soc.strip().lower()
    for key, (_, pattern) in SUPPORTED_SOCS.items():
        if re.fullmatch(pattern, name):
            return key
    raise ValueError(f"unknown SoC {soc!r}: supported are {_SOC_SPELLINGS}")


# --------------------------------------------------------------------------------------------------
# bundled tables and CANN merge
# --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _bundled(key: str) -> dict[str, Any]:
    """The bundled table for a SoC key, parsed once per process."""
    text = read_package_text("npu_jupyter._ops", f"{key}.json")
    return cast("dict[str, Any]", json.loads(text))


def _bundled_provenance(table: dict[str, Any]) -> str:
    prov = table["provenance"]
    return "\n".join([prov["summary"], prov["declared_list"], prov["host_kept_list"], prov["mixed_precision"]])


def _aicore_row_update(
    row: dict[str, Any], info: dict[str, AicoreOp], fallbacks: dict[str, list[str]]
) -> dict[str, Any]:
    """Engine, dtypes and policy of one declared row from a real ops-info."""
    ir = row["ir_type"]
    # The IR type itself, its const-attr D variant, or the op a GE fusion pass turns it into.
    aicore_ir = next((c for c in (ir, ir + "D", row.get("aicore_ir_type", "")) if c and c in info), "")
    policy = {"true": "white", "false": "black"}.get(info[aicore_ir].flag, "gray") if aicore_ir else "gray"
    if row["kernel"] in ("ge", "function_call"):  # GE runs these itself, whatever the op-info says
        return dict(row, policy=policy)
    if not aicore_ir:
        updated = dict(row, policy=policy, aicore_dtypes=[], aicore_ir_type="")
        if row["engine"] == "AI_CORE":
            aicpu = row["aicpu_dtypes"] or fallbacks["aicpu"]
            updated.update(engine="AI_CPU", kernel="aicpu_inferred", aicpu_dtypes=aicpu)
        return updated
    op = info[aicore_ir]
    if op.float_dtypes:
        dtypes = list(op.float_dtypes)
    elif op.static_dtypes:
        dtypes = []  # a kernel without float inputs
    elif row["cube"]:
        dtypes = fallbacks["cube"]
    else:
        dtypes = fallbacks["unknown_aicore"]
    return dict(
        row,
        engine="AI_CORE",
        kernel="aicore_fused" if row["kernel"] == "aicore_fused" else "aicore",
        aicore_dtypes=dtypes,
        aicore_ir_type="" if aicore_ir == ir else aicore_ir,
        policy=policy,
        heavy=op.heavy or row["heavy"],
    )


def _without_declared_part(source: str) -> str:
    return "; ".join(part for part in source.split("; ") if part and not part.startswith("declared:"))


def _merge_supported(
    rows: dict[str, dict[str, Any]],
    supported: dict[str, dict[str, bool]],
    files: str,
    fallbacks: dict[str, list[str]],
) -> dict[str, dict[str, Any]]:
    """Declared op types and isGray/isHeavy exactly as the install's npu_supported_ops.json says."""
    merged = {}
    for tf_type, row in rows.items():
        if tf_type not in supported:
            merged[tf_type] = dict(
                row,
                engine="HOST",
                kernel="host",
                declared=False,
                gray_in_mix=False,
                gray_reason="",
                source=row["source"] if not row.get("declared", True) else f"not declared in {files}",
            )
    for tf_type, flags in supported.items():
        base = rows.get(tf_type)
        if base is None or not base.get("declared", True):
            base = {
                "ir_type": tf_type,
                "engine": "AI_CPU",
                "kernel": "aicpu_inferred",
                "aicore_dtypes": [],
                "aicpu_dtypes": fallbacks["aicpu"],
                "cube": False,
                "policy": "gray",
                "heavy": False,
                "source": "engine: INFERRED AI CPU until an ops-info entry says AI Core",
            }
        merged[tf_type] = dict(
            base,
            declared=True,
            gray_in_mix=flags["isGray"],
            heavy=flags["isHeavy"],
            gray_reason="isGray in npu_supported_ops.json" if flags["isGray"] else "",
            source=f"declared in {files}; " + _without_declared_part(base.get("source", "")),
        )
    return merged


def _merge_cann(table: dict[str, Any], cann: CannData) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Rows and mixed-precision lists with whatever the install provides replacing the approximation."""
    rows: dict[str, dict[str, Any]] = dict(table["ops"])
    lists = {
        "white": table["mixed_precision_white"],
        "black": table["mixed_precision_black"],
        "ir_types": table["ir_types"],
    }
    fallbacks = table["dtype_fallbacks"]
    if cann.supported is not None:
        rows = _merge_supported(rows, cann.supported, ", ".join(map(str, cann.supported_files)), fallbacks)
    if cann.ops_info is not None:
        for tf_type, row in rows.items():
            if row.get("declared", True):
                rows[tf_type] = _aicore_row_update(row, cann.ops_info, fallbacks)
        declared_irs = {r["ir_type"] for r in rows.values() if r.get("declared", True)}
        lists = {
            "white": sorted(ir for ir, op in cann.ops_info.items() if op.flag == "true"),
            "black": sorted(ir for ir, op in cann.ops_info.items() if op.flag == "false"),
            "ir_types": sorted(set(cann.ops_info) | declared_irs),
        }
    return rows, lists


def _cann_provenance(cann: CannData, soc_dir: str) -> str:
    parts = [f"CANN install at {cann.opp}:"]
    if cann.supported is not None:
        parts.append("declared op types and isGray/isHeavy from " + ", ".join(map(str, cann.supported_files)))
    else:
        parts.append("no npu_supported_ops.json found; declared/host-kept lists are the bundled APPROXIMATION")
    if cann.ops_info is not None:
        shown = ", ".join(map(str, cann.ops_info_files[:3])) + (" ..." if len(cann.ops_info_files) > 3 else "")
        parts.append(f"AI Core dtypes and precision_reduce flags from {len(cann.ops_info_files)} file(s): {shown}")
    else:
        parts.append(f"no aic-{soc_dir}-ops-info.json found; AI Core data is the bundled table")
    return "\n".join(parts)


@functools.lru_cache(maxsize=32)
def _build(key: str, opp: str | None, custom_opp: str | None, override: HostOps | None) -> OpLibrary:
    table = _bundled(key)
    name = SUPPORTED_SOCS[key][0]
    if opp is None:
        rows = table["ops"]
        lists = {**{k: table[f"mixed_precision_{k}"] for k in ("white", "black")}, "ir_types": table["ir_types"]}
        provenance = _bundled_provenance(table)
        approximate = True
    else:
        cann = read_install(opp, key, custom_opp)
        rows, lists = _merge_cann(table, cann)
        approximate = cann.supported is None or cann.ops_info is None
        provenance = _cann_provenance(cann, key) + ("\n" + _bundled_provenance(table) if approximate else "")
    extra: frozenset[str] = frozenset()
    if override is not None:
        rows = dict(rows)
        extra = apply_host_ops(rows, override)
        provenance += f"\nHost-kept list overridden by {override.origin}."
    return OpLibrary(
        name,
        rows,
        white=lists["white"],
        black=lists["black"],
        ir_types=lists["ir_types"],
        provenance=provenance,
        approximate=approximate,
        host_kept_extra=extra,
    )


def load_library(soc: str = "Ascend910", *, opp_path: str | None = None, host_ops: object = None) -> OpLibrary:
    """The op library of ``soc`` (any adapter soc_config spelling, case-insensitive).

    ``opp_path`` (else ``$ASCEND_OPP_PATH``) points at a CANN ``opp`` directory to read the real
    ``npu_supported_ops.json`` (plus custom ones from ``$ASCEND_CUSTOM_OPP_PATH`` and vendors) and
    ``aic-<soc>-ops-info.json``; without it the bundled approximate table is used. ``host_ops``
    (else ``$NPU_JUPYTER_HOST_OPS``) replaces or extends the host-kept list, see the module doc.
    Results are cached; a changed override file is re-read on the next call.
    """
    key = resolve_soc(soc)
    opp = opp_path if opp_path is not None else (os.environ.get(OPP_ENV) or None)
    custom = (os.environ.get(CUSTOM_OPP_ENV) or None) if opp is not None else None
    return _build(key, None if opp is None else str(Path(opp).expanduser()), custom, host_ops_from(host_ops))
