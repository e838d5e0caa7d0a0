"""The report payload's shapes as TypedDicts, generated from ``report_schema.json`` by tools/gen_schema.py.

Do not edit: change the schema and run ``python tools/gen_schema.py``. Typing only (``typing.TypedDict``
and ``Literal`` are Python 3.8+; the kernel side runs on 3.7): import the names under ``TYPE_CHECKING``.
An object with free-form keys (``config``, ``labels``) is a ``dict``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Literal, TypedDict  # novermin (never imported at run time)

    Engine = Literal["AI_CORE", "AI_CPU", "HOST"]

    Tone = Literal["", "error", "warn", "path"]

    class _SummaryRequired(TypedDict):
        """Its keys that are always present."""

        ops: int
        ai_core: int
        ai_cpu: int
        host: int
        precision_changed: int
        clusters: int
        transfers: int
        transfer_bytes: int | None

    class Summary(_SummaryRequired, total=False):
        """The payload's ``Summary`` object."""

        approximate: int

    class Cluster(TypedDict):
        """The payload's ``Cluster`` object."""

        name: str
        size: int

    class _OpRequired(TypedDict):
        """Its keys that are always present."""

        n: str
        t: str
        e: Engine
        d0: str
        d1: str
        c: int
        pr: int
        xr: int
        i: list[int]

    class Op(_OpRequired, total=False):
        """The payload's ``Op`` object."""

        rd: str
        rf: str
        us: float
        dr: Drift
        ov: bool
        est_us: float
        approximate: bool
        f: int

    class _DriftRequired(TypedDict):
        """Its keys that are always present."""

        max_abs: float | None
        max_rel: float | None
        cos: float | None

    class Drift(_DriftRequired, total=False):
        """Drift of an op's output against float32; null where the metric is not finite (inf/NaN: JSON has none)."""

        rmse: float | None
        accumulated_rel: float | None
        rel_rmse: float | None
        step: int
        ref_rms: float | None
        size: float
        in_rel: float | None
        from_cancelled: bool
        maybe_cancelled: bool

    class _TransferRequired(TypedDict):
        """Its keys that are always present."""

        s: int
        d: int
        dt: str
        b: int | None
        dir: Literal["h2d", "d2h"]  # novermin (a string annotation)

    class Transfer(_TransferRequired, total=False):
        """The payload's ``Transfer`` object."""

        o: int

    class Fact(TypedDict):
        """One labelled line of a report: "label: text"."""

        key: str
        label: str
        text: str
        tone: Tone

    class CostModel(TypedDict):
        """The cost model's per-step estimate; every number null for a plan the adapter would refuse (its basis
        then starts "refused").
        """

        step_ms: float | None
        memory_bytes: int | None
        step_ratio_fp32: float | None
        memory_ratio_fp32: float | None
        launch_share: float | None
        basis: str

    Labels = dict[str, str]

    class FunctionInfo(TypedDict):
        """A traced function a report covers: the reported one first, then the functions it calls."""

        name: str
        label: str
        ops: int

    class _RunInfoRequired(TypedDict):
        """Its keys that are always present."""

        backend: str
        steps: int
        wall_ms: float
        reference_wall_ms: float | None
        first_overflow: str | None
        dump_dir: str | None
        trace_file: str | None
        op_summary_csv: str | None
        prediction: str | None
        adapter_outputs: list[AdapterOutput]
        actual: Actual | None

    class RunInfo(_RunInfoRequired, total=False):
        """What one run measured. Files are shown relative to the kernel's working directory (the notebook's
        folder) when inside it -- the views then link them -- else absolute (`mime.shown_path`).
        """

        unit: Literal["step", "call"]  # novermin (a string annotation)
        dump_steps: list[int]
        dump_skipped: list[DumpSkip]
        rounded_tensors: int
        calls_from: list[CallsFrom]
        drift_worst: list[int]
        nonfinite: NonFinite
        overflow_check: OverflowCheck

    class DumpSkip(TypedDict):
        """The payload's ``DumpSkip`` object."""

        step: int
        reason: str

    class CallsFrom(TypedDict):
        """Calls of a traced function that came from one place."""

        where: str
        calls: int

    class NonFinite(TypedDict):
        """The payload's ``NonFinite`` object."""

        first_op: str
        step: int | None
        reason: str

    class OverflowCheck(TypedDict):
        """What overflow detection looked at: with `first_overflow` null it found no inf/NaN in those steps
        (calls).
        """

        checked: int
        mode: str
        storage: list[str]

    class AdapterOutput(TypedDict):
        """A folder the real adapter writes (ascend backend)."""

        label: str
        path: str
        exists: bool

    class Actual(TypedDict):
        """GE's compiled-graph dump read back: predicted next to actual per op (ascend backend)."""

        files: list[str]
        rows: list[ActualRow]
        compared: int
        differ: int
        missing: int
        error: str | None

    class ActualRow(TypedDict):
        """The payload's ``ActualRow`` object."""

        n: str
        pe: str
        ae: str
        pd: list[str]
        ad: list[str]
        ge: str
        same: bool

    class _ReportRequired(TypedDict):
        """Its keys that are always present."""

        schema: Literal["npu-jupyter.report"]  # novermin (a string annotation)
        version: Literal[1]  # novermin (a string annotation)
        kind: Literal["plan", "run"]  # novermin (a string annotation)
        title: str
        soc: str
        config: dict[str, bool | float | str | None]
        effective_precision_mode: str
        summary: Summary
        reasons: list[str]
        clusters: list[Cluster]
        ops: list[Op]
        transfers: list[Transfer]
        warnings: list[str]
        errors: list[str]
        truncated: bool
        facts: list[Fact]

    class Report(_ReportRequired, total=False):
        """A plan or a run report: one JSON object. Keys are short because a 7k-op training graph must stay under 1
        MB; every string in it is user data (op names, types, file paths, reasons) and must be inserted into a
        page as text, never as HTML.
        """

        notes: list[str]
        predicted: bool
        cost_model: CostModel
        labels: Labels
        functions: list[FunctionInfo]
        run: RunInfo
