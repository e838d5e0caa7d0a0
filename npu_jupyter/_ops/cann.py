"""Read a real CANN install's operator files, where the adapter and GE read them.

With CANN present the op tables need no approximation: ``npu_supported_ops.json`` says which TF op
types the adapter may offload (and which are kept on the host in mixed computing, ``isGray``), and
``aic-<soc>-ops-info.json`` gives every AI Core kernel's dtypes and precision_reduce flag. The file
locations follow the adapter's ``NpuOpsIdentifier`` (ADAPTER-FACTS 3.2) and CANN's op_impl layout
(ADAPTER-FACTS 4.3): single ops-info file or one file per op type.

Nothing here imports TensorFlow. Malformed files raise :class:`OpDataError` naming the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

SUPPORTED_OPS = "npu_supported_ops.json"


class OpDataError(ValueError):
    """An operator data file (CANN install or host-ops override) cannot be used."""


@dataclass(frozen=True)
class AicoreOp:
    """One AI Core op-info entry, reduced to what precision and placement need."""

    float_dtypes: tuple[str, ...]  # of the first float-taking input; () when the entry lists none
    static_dtypes: bool  # the entry lists input dtypes (False: chosen by op_select_format)
    flag: str  # precision_reduce flag: "true" | "false" | "gray" (absent)
    heavy: bool


@dataclass
class CannData:
    """What was found under one OPP directory; ``None`` members were not found."""

    opp: Path
    supported: dict[str, dict[str, bool]] | None = None
    supported_files: list[Path] = field(default_factory=list)
    ops_info: dict[str, AicoreOp] | None = None
    ops_info_files: list[Path] = field(default_factory=list)


def _load_json(path: Path) -> object:
    """The file's JSON, of whatever shape it has (callers check it), or one OpDataError."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}"
        raise OpDataError(f"{path}: not valid JSON ({err.msg} at {where})") from None
    except (OSError, UnicodeDecodeError) as err:
        raise OpDataError(f"{path}: cannot be read ({err})") from None


def _as_bool(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def supported_ops_files(opp: Path, custom_opp_path: str | None = None) -> tuple[Path | None, list[Path]]:
    """The built-in file and the custom files, lowest priority first (later files override).

    Built-in: ``<opp>/built-in/framework/tensorflow/`` when ``<opp>/built-in`` is a directory (new
    layout), else ``<opp>/framework/built-in/tensorflow/``. Custom: the old
    ``<opp>/framework/custom/tensorflow/``, vendors named in ``<opp>/vendors/config.ini``, then each
    ``$ASCEND_CUSTOM_OPP_PATH`` entry. The relative priority among custom sources is not stated in
    the adapter facts; first-listed vendors and paths win here, as their lists read (inferred).
    """
    if (opp / "built-in").is_dir():
        builtin = opp / "built-in" / "framework" / "tensorflow" / SUPPORTED_OPS
    else:
        builtin = opp / "framework" / "built-in" / "tensorflow" / SUPPORTED_OPS
    custom = [opp / "framework" / "custom" / "tensorflow" / SUPPORTED_OPS]
    custom += [opp / "vendors" / v / "framework" / "tensorflow" / SUPPORTED_OPS for v in reversed(_vendors(opp))]
    for entry in reversed([p for p in (custom_opp_path or "").split(":") if p]):
        custom.append(Path(entry) / "framework" / "tensorflow" / SUPPORTED_OPS)
    return (builtin if builtin.is_file() else None), [p for p in custom if p.is_file()]


def _vendors(opp: Path) -> list[str]:
    """Vendor names from ``<opp>/vendors/config.ini`` (one ``key=v1,v2`` line)."""
    config = opp / "vendors" / "config.ini"
    if not config.is_file():
        return []
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        if "=" in line:
            return [v.strip() for v in line.split("=", 1)[1].split(",") if v.strip()]
    return []


def read_supported_ops(path: Path) -> dict[str, dict[str, bool]]:
    """``{tf_type: {"isGray": bool, "isHeavy": bool}}`` from one npu_supported_ops.json."""
    raw = _load_json(path)
    if not isinstance(raw, dict):
        raise OpDataError(f"{path}: expected an object keyed by TensorFlow op type, got {type(raw).__name__}")
    result = {}
    for op_type, entry in raw.items():
        if not isinstance(entry, dict):
            example = '{"isGray": false, "isHeavy": false}'
            raise OpDataError(f"{path}: entry {op_type!r} must be an object like {example}")
        result[op_type] = {"isGray": _as_bool(entry.get("isGray")), "isHeavy": _as_bool(entry.get("isHeavy"))}
    return result


_FLOATS = {"float16": "float16", "float": "float32", "float32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16"}


def _entry_to_op(path: Path, op_type: str, entry: object) -> AicoreOp:
    if not isinstance(entry, dict):
        raise OpDataError(f"{path}: op {op_type!r} must be an object of op-info sections")
    inputs = sorted((k for k in entry if k.startswith("input") and k[5:].isdigit()), key=lambda k: int(k[5:]))
    floats: tuple[str, ...] = ()
    static = False
    for key in inputs:
        section = entry[key]
        dtypes = section.get("dtype", "") if isinstance(section, dict) else ""
        names = [d.strip() for d in str(dtypes).split(",") if d.strip()]
        static = static or bool(names)
        found = sorted({_FLOATS[d] for d in names if d in _FLOATS})
        if found:
            floats = tuple(found)
            break
    flag = str((entry.get("precision_reduce") or {}).get("flag", "")).strip().lower()
    heavy = _as_bool((entry.get("heavyOp") or {}).get("flag"))
    return AicoreOp(floats, static, flag if flag in ("true", "false") else "gray", heavy)


def _read_ops_info_file(path: Path) -> dict[str, AicoreOp]:
    raw = _load_json(path)
    if not isinstance(raw, dict):
        raise OpDataError(f"{path}: expected an object keyed by Ascend op type, got {type(raw).__name__}")
    return {op_type: _entry_to_op(path, op_type, entry) for op_type, entry in raw.items()}


def ops_info_files(opp: Path, soc_dir: str) -> list[Path]:
    """The single ``aic-<soc>-ops-info.json`` and/or per-op ``aic-<soc>-ops-info-<opType>.json`` files."""
    for base in (
        opp / "built-in" / "op_impl" / "ai_core" / "tbe" / "config" / soc_dir,
        opp / "op_impl" / "built-in" / "ai_core" / "tbe" / "config" / soc_dir,
    ):
        if base.is_dir():
            single = base / f"aic-{soc_dir}-ops-info.json"
            split = sorted(base.glob(f"aic-{soc_dir}-ops-info-*.json"))
            files = ([single] if single.is_file() else []) + split
            if files:
                return files
    return []


def read_install(opp: str | os.PathLike[str], soc_dir: str, custom_opp_path: str | None = None) -> CannData:
    """Everything found under ``opp`` for one SoC directory name (e.g. ``ascend910b``)."""
    root = Path(opp)
    data = CannData(root)
    builtin, custom = supported_ops_files(root, custom_opp_path)
    if builtin is not None:
        data.supported = read_supported_ops(builtin)
        data.supported_files.append(builtin)
        for path in custom:  # custom entries override built-in ones
            data.supported.update(read_supported_ops(path))
            data.supported_files.append(path)
    files = ops_info_files(root, soc_dir)
    if files:
        data.ops_info = {}
        for path in files:
            data.ops_info.update(_read_ops_info_file(path))
        data.ops_info_files = files
    return data
