"""Which dtype each offloaded op computes in, per precision mode (tests/data/reference/ADAPTER-FACTS.md §4).

The fusion engine picks, for every tensor of an AI Core op, a dtype from the kernel's supported set
relative to the tensor's original dtype: *rise* (same or higher precision), *reduce* (lower precision,
nearest first), with the mode deciding which is wanted. The emulation here works per op: the op's
float tensors of its original float dtype all get one decided dtype (cube ops under force_fp32 read
float16 and write float32), processed in topological order so that a mixed-precision gray op can
follow its producer. Host ops keep their original dtype. Every decision names the rule it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from npu_jupyter._options import catalogue
from npu_jupyter._options.rules import MIXED_PRECISION_MODES, MIXED_PRECISION_V2
from npu_jupyter._plan.graph.graph import GraphView, Node
from npu_jupyter._plan.precision_files import (
    DtypeRule,
    FileFindings,
    apply_mixlist,
    read_customize_dtypes,
    read_mixlist,
    read_op_precision_mode,
)
from npu_jupyter._plan.readonly import dtype_list
from npu_jupyter._plan.settings import PlanSettings

if TYPE_CHECKING:
    from npu_jupyter._ops.library import OpCaps, OpLibrary

FP16, BF16, FP32 = "float16", "bfloat16", "float32"
FLOATS = frozenset({FP16, BF16, FP32})
_LOWER = {FP32: (BF16, FP16), BF16: (FP16,), FP16: ()}
_DEFAULT_SUPPORT = frozenset({FP16, FP32})
_COMPLEX = frozenset({"complex64", "complex128"})

# user-facing mode string -> fusion-engine strategy (§4.1), from the option catalogue
_MODES = catalogue.precision_strategies("precision_mode")
_MODES_V2 = catalogue.precision_strategies("precision_mode_v2")
# SoCs whose cube units default to high precision in training (docs: Atlas A2/A3, 950)
_HIGH_PRECISION_SOCS = frozenset({"Ascend910B", "Ascend910_93", "Ascend950"})
_BF16_SOCS = _HIGH_PRECISION_SOCS


@dataclass
class EffectiveMode:
    """The precision mode GE applies and where it came from."""

    name: str  # user-facing value ("allow_fp32_to_fp16", "mixed_float16", ...)
    strategy: str  # fusion-engine strategy
    source: str  # "precision_mode", "precision_mode_v2" or "default for <soc> ..."


def effective_mode(s: PlanSettings) -> EffectiveMode:
    """precision_mode wins; else precision_mode_v2; else the SoC / graph_run_mode default (§4.1)."""
    if s.precision_mode:
        return EffectiveMode(s.precision_mode, _MODES.get(s.precision_mode, "UNKNOWN"), "precision_mode")
    if s.precision_mode_v2:
        return EffectiveMode(s.precision_mode_v2, _MODES_V2.get(s.precision_mode_v2, "UNKNOWN"), "precision_mode_v2")
    if s.graph_run_mode == 0:
        return EffectiveMode("force_fp16", "FORCE_FP16", "default for online inference (graph_run_mode=0)")
    if s.soc in _HIGH_PRECISION_SOCS:
        return EffectiveMode("must_keep_origin_dtype", "MUST_KEEP", f"training default on {s.soc}")
    return EffectiveMode("allow_fp32_to_fp16", "ALLOW_FP32_TO_FP16", f"training default on {s.soc}")


@dataclass
class OpPrecision:
    """The dtypes the device is predicted to use for one op's inputs and outputs, and why."""

    input_dtypes: list[str]
    output_dtypes: list[str]
    reason: str
    policy: str | None = None
    impl_mode: str | None = None
    engine: str | None = None  # set when precision moves the op to another engine (AI CPU fallback)


@dataclass
class PrecisionResult:
    """The precision stage's answer: the mode in effect, one OpPrecision per op, findings."""

    mode: EffectiveMode
    ops: list[OpPrecision]
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# matchers (§4.2)
# --------------------------------------------------------------------------------------------


def _rise(orig: str, supported: frozenset[str]) -> str | None:
    if orig in supported:
        return orig
    if orig in (FP16, BF16) and FP32 in supported:
        return FP32
    return None


def _reduce(orig: str, supported: frozenset[str], forbidden: str | None) -> str | None:
    for cand in _LOWER.get(orig, ()):
        if cand != forbidden and cand in supported:
            return cand
    return None


def _forbidden(strategy: str, orig: str) -> str | None:
    if strategy in ("FORCE_FP16", "FORCE_FP32"):
        return BF16
    if strategy in ("ALLOW_FP32_TO_FP16", "MIX_FP16"):
        return None if orig == BF16 else BF16
    if strategy in ("ALLOW_FP32_TO_BF16", "MIX_BF16"):
        return None if orig == FP16 else FP16
    return None


# --------------------------------------------------------------------------------------------
# per-op strategies: each returns (input dtype, output dtype, reason) for the op's float tensors
# --------------------------------------------------------------------------------------------


def _allow_to_low(
    orig: str, sup: frozenset[str], cube: bool, target: str, strategy: str, label: str
) -> tuple[str, str, str]:
    if cube and orig == FP32 and target in sup:
        return target, target, f"cube op goes to {target} under {label}"
    kept = _rise(orig, sup)
    if kept is not None:
        note = "the AI Core supports it" if kept == orig else f"no {orig} kernel, so the higher-precision {kept}"
        return kept, kept, f"keeps {kept} under {label}: {note}"
    low = _reduce(orig, sup, _forbidden(strategy, orig))
    if low is not None:
        return low, low, f"the AI Core has no {orig} kernel: reduced to {low} under {label}"
    return orig, orig, f"no AI Core kernel matches {orig}: kept {orig} under {label}"


def _force_fp16(orig: str, sup: frozenset[str]) -> tuple[str, str, str]:
    got = _rise(FP16, sup) if orig in (FP32, BF16, FP16) else None
    if got is None:
        return orig, orig, "no float16 (or higher) kernel: kept its original dtype under force_fp16"
    why = "force_fp16: float tensors run in float16" if got == FP16 else "force_fp16, but no float16 kernel: float32"
    return got, got, why


def _force_fp32(orig: str, sup: frozenset[str], cube: bool) -> tuple[str, str, str]:
    if cube:
        return FP16, FP32, "cube op reads float16 and writes float32 (force_fp32 / cube_fp16in_fp32out)"
    got = _rise(FP32, sup) or _reduce(FP32, sup, BF16)
    if got is None:
        return orig, orig, "no matching AI Core kernel: kept its original dtype under force_fp32"
    why = "force_fp32: float tensors run in float32" if got == FP32 else "force_fp32, but no float32 kernel: float16"
    return got, got, why


def _must_keep(orig: str, sup: frozenset[str], label: str) -> tuple[str, str, str] | None:
    got = _rise(orig, sup)
    if got is None:
        return None
    note = "original dtype kept" if got == orig else f"no {orig} kernel: the higher-precision {got}"
    return got, got, f"{label}: {note}"


def _original_float(n: Node) -> str | None:
    """The dtype the mode acts on: the op's first float input, else its first float output."""
    for d in n.input_dtypes:
        if d in FLOATS:
            return d
    for d in n.output_dtypes:
        if d in FLOATS:
            return d
    return None


# --------------------------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------------------------


class _Decider:
    """Holds the per-plan tables (mode, mixlist, customize rules) and decides op by op."""

    def __init__(
        self, view: GraphView, device: list[bool], cluster_of: list[str | None], lib: OpLibrary, s: PlanSettings
    ) -> None:
        self.view, self.device, self.cluster_of, self.lib, self.s = view, device, cluster_of, lib, s
        self.mode = effective_mode(s)
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.mixlist: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self.cust_name: dict[str, DtypeRule] = {}
        self.cust_type: dict[str, DtypeRule] = {}
        self.impl_by_type: dict[str, str] = {}
        self.impl_by_name: dict[str, str] = {}
        self.impl_all: str | None = None
        self.impl_types: set[str] | None = None
        # Decisions depend on the op type and dtypes, not on the node: memoised per plan, since the
        # same few dozen types repeat thousands of times in a training graph.
        self._policies: dict[str, tuple[str, str]] = {}
        self._choices: dict[tuple[Any, ...], tuple[str, str, str] | None] = {}
        self._check_mode()
        self._load_files()
        # most configs set no implementation mode: skip the per-op lookup then
        self._any_impl = self._impl_configured()
        # Whole answers per (op type, input dtypes, output dtypes) for device ops, where nothing else
        # decides: not with per-name rules (customize_dtypes, op_precision_mode by name). See decide().
        self._answers: dict[tuple[object, ...], OpPrecision] | None = (
            None if (self.cust_name or self.cust_type or self.impl_by_name) else {}
        )
        self._mix_strategy = self.mode.strategy in ("MIX_FP16", "MIX_BF16")
        # Host ops' answers per pair of dtype lists: a host op keeps its dtypes whatever its type
        self._host: dict[tuple[int, int], OpPrecision] = {}

    # ---- setup ----------------------------------------------------------------------------
    def _impl_configured(self) -> bool:
        """Whether any implementation mode is set (read after ``_load_files`` filled them in)."""
        return bool(self.impl_all is not None or self.impl_by_name or self.impl_by_type)

    def _check_mode(self) -> None:
        m, s = self.mode, self.s
        if m.strategy == "UNKNOWN":
            self.errors.append(f"Precision mode value {m.name} is incorrect")
        if m.strategy in ("CUBE_HIF8", "MIXED_HIF8"):
            self.errors.append(
                f"precision_mode_v2 {m.name!r} is not supported in the current version "
                "(HiFloat8 needs an Ascend 950): planned as must_keep_origin_dtype"
            )
            m.strategy = "MUST_KEEP"
        if m.strategy in ("MIX_BF16", "ALLOW_FP32_TO_BF16") and s.soc not in _BF16_SOCS:
            self.errors.append(f"Current soc not support dtype of BFloat16 ({m.name} on {s.soc})")

    def _findings(self, f: FileFindings) -> None:
        self.errors.extend(f.errors)
        self.warnings.extend(f.warnings)

    def _load_files(self) -> None:
        s = self.s
        if s.modify_mixlist:
            if s.precision_mode and s.precision_mode not in MIXED_PRECISION_MODES:
                self.errors.append(
                    "modify_mixlist is assigned, please ensure that precision_mode is assigned to "
                    "'allow_mix_precision' or 'allow_mix_precision_fp16' or 'allow_mix_precision_bf16'(if available)."
                )
            elif not s.precision_mode and s.precision_mode_v2 and s.precision_mode_v2 not in MIXED_PRECISION_V2:
                self.errors.append(
                    "modify_mixlist is assigned, please ensure that precision_mode_v2 is assigned to "
                    "'mixed_float16', 'mixed_hif8' or 'mixed_bfloat16'(if available)."
                )
            elif not s.precision_mode and not s.precision_mode_v2:
                self.errors.append(
                    "modify_mixlist is assigned, please ensure precision_mode only can be assigned to "
                    "'allow_mix_precision', 'allow_mix_precision_fp16' or 'allow_mix_precision_bf16', "
                    "precision_mode_v2 only can be assigned to 'mixed_float16', 'mixed_hif8' or 'mixed_bfloat16'."
                )
            else:
                self.mixlist, f = read_mixlist(s.modify_mixlist, self.lib)
                self._findings(f)
                if f.errors:
                    self.mixlist = {}
        if s.customize_dtypes:
            self.cust_name, self.cust_type, f = read_customize_dtypes(s.customize_dtypes, self.lib)
            self._findings(f)
            if self.mode.strategy == "MUST_KEEP" and (self.cust_name or self.cust_type):
                self.warnings.append(f"customize_dtypes has no effect under {self.mode.name}: the file is ignored")
                self.cust_name, self.cust_type = {}, {}
        if s.op_select_implmode:
            self.impl_all = s.op_select_implmode
            if s.optypelist_for_implmode:
                self.impl_types = set()
                for name in s.optypelist_for_implmode.split(","):
                    name = name.strip()
                    if name:
                        ir = self.lib.ir_type(name)
                        caps = self.lib.caps(name)
                        if ir is None and caps is None:
                            self.warnings.append(f"optypelist_for_implmode names {name!r}, which matches no op type")
                        self.impl_types.update(k for k in (name, ir, caps and caps.ir_type) if k)
        if s.op_precision_mode:
            f = FileFindings()
            self.impl_by_type, self.impl_by_name = read_op_precision_mode(s.op_precision_mode, f)
            if f.errors:  # an unreadable file only loses the per-op modes here
                self.warnings.extend(f.errors)
            self.warnings.extend(f.warnings)

    # ---- per op ---------------------------------------------------------------------------

    def _impl_mode(self, n: Node, ir: str | None) -> str | None:
        """op_precision_mode (per node, then per type) wins over op_select_implmode (§1.2 doc)."""
        hit = self.impl_by_name.get(n.name)
        if hit is None:
            hit = self.impl_by_type.get(ir or "") or self.impl_by_type.get(n.op)
        if hit is not None:
            return hit
        if self.impl_all is None:
            return None
        if self.impl_types is None or (ir or n.op) in self.impl_types:
            return self.impl_all
        return None

    def _producer_dtype(self, n: Node, decided: list[OpPrecision | None]) -> str | None:
        """Dtype a gray op follows: its first float input's producer, jumping over an up-cast."""
        nodes = self.view.nodes
        cluster = self.cluster_of[n.index]
        for src, slot, dt in zip(n.input_names, n.input_slots, n.input_dtypes):
            if dt not in FLOATS:
                continue
            p = nodes.get(src)
            if p is None or self.cluster_of[p.index] != cluster:
                return None  # a GeOp input: no producer inside the compiled graph
            dp = decided[p.index]
            if dp is None:
                return None  # a GeOp input: no producer inside the compiled graph
            got = dp.output_dtypes[slot] if slot < len(dp.output_dtypes) else dt
            if p.op == "Cast" and dp.policy != "black" and dp.input_dtypes:
                before = dp.input_dtypes[0]
                if before in (FP16, BF16) and got in (FP32, BF16) and before != got:
                    return before
            return got
        return None

    def _policy(self, n: Node, caps: OpCaps) -> tuple[str, str]:
        hit = self._policies.get(n.op)
        if hit is None:
            hit = self._policies[n.op] = self._policy_of(n, caps)
        return hit

    def _policy_of(self, n: Node, caps: OpCaps) -> tuple[str, str]:
        ir, base = caps.ir_type, caps.policy  # only AI Core ops (a row of the table) have a list
        new, changed = apply_mixlist(base, self.mixlist.get(ir), ir, self.warnings)
        return new, (
            f"moved to the {new} list by modify_mixlist"
            if changed and new != base
            else f"{new} list" + (" (modify_mixlist)" if changed else "")
        )

    def decide(self, n: Node, decided: list[OpPrecision | None]) -> OpPrecision:
        """The op's dtypes and reason; one answer shared by device ops that only their dtypes tell apart.

        A training graph repeats a few dozen (op type, dtypes) thousands of times. Host ops, which keep
        their dtypes, share one answer per pair of dtype lists (ResNet-50's training step has 2,200:
        0.2 ms of a cold plan). A device op's answer is reused only where the node itself cannot
        matter: outside a keep_dtype scope, and not one whose answer reported an error naming it; a
        gray-list op under mixed precision follows its producer, so its producer's dtype is part of
        the key. The shared answer's lists equal the node's own in content and are read-only
        (:mod:`npu_jupyter._plan.readonly`): the decisions hold them as they are.
        ``tests/plan/test_precision.py`` compares the plans with deciding every op on its own.
        """
        if not self.device[n.index]:  # keyed like the device answers below: interned lists, by identity
            key2 = (id(n.input_dtypes), id(n.output_dtypes))
            host = self._host.get(key2)
            if host is None:
                host = self._host[key2] = OpPrecision(
                    n.input_dtypes, n.output_dtypes, "runs on the host in its original dtype"
                )
            return host
        answers = self._answers
        if answers is None or n.keep_dtype:
            return self._decide(n, decided)
        # The view's dtype lists are interned (readonly.dtype_list): equal dtypes are one object, so the
        # lists' identities stand for their values. A list built by hand is its own object: no sharing,
        # never a wrong one (the view keeps every list alive while the plan is built, so no id is reused).
        key: tuple[object, ...] = (n.op, id(n.input_dtypes), id(n.output_dtypes))
        followed: tuple[str | None] | None = None  # the producer's dtype a gray op follows, once found
        if self._mix_strategy:
            policy = self._policies.get(n.op)
            if policy is not None and policy[0] == "gray":  # a gray op's answer also rests on its producer's dtype
                followed = (self._producer_dtype(n, decided),)
                key += followed
        hit = answers.get(key)
        if hit is not None:
            return hit
        errors = len(self.errors)
        got = self._decide(n, decided, followed)
        # Not stored: an answer that reported an error naming this op, and a gray op's answer keyed without
        # its producer's dtype (the first op of a type, whose list is looked up while deciding it).
        if len(self.errors) == errors and (followed is not None or not (self._mix_strategy and got.policy == "gray")):
            answers[key] = got
        return got

    def _decide(
        self, n: Node, decided: list[OpPrecision | None], followed: tuple[str | None] | None = None
    ) -> OpPrecision:
        """The op's dtypes and reason, decided from its own data (``followed``: its producer's dtype, when
        :meth:`decide` has looked it up already).
        """
        caps = self.lib.caps(n.op)
        ir = caps.ir_type if caps is not None else None
        impl = self._impl_mode(n, ir) if self._any_impl else None
        if self.cust_name or self.cust_type:
            rule = self.cust_name.get(n.name) or (self.cust_type.get(ir) if ir else None)
            if rule is not None:
                return self._customized(n, rule, impl)
        orig = _original_float(n)
        if orig is None:
            return OpPrecision(
                n.input_dtypes, n.output_dtypes, "no floating-point tensors: dtypes unchanged", None, impl
            )
        policy = None
        strategy, label = self.mode.strategy, self.mode.name
        if caps is not None and getattr(caps, "kernel", "") == "ge":
            return self._same(n, orig, orig, "executed by GE itself (no compute kernel): original dtype", None, impl)
        if caps is None or caps.engine != "AI_CORE":
            if caps is not None and caps.engine == "AI_CPU":
                return self._same(n, orig, orig, "AI CPU kernel: runs in its original dtype", None, impl)
            return self._same(n, orig, orig, "compiled into the GeOp in its original dtype", None, impl)
        sup = caps.aicore_dtypes or _DEFAULT_SUPPORT
        if strategy in ("MIX_FP16", "MIX_BF16"):
            policy, policy_why = self._policy(n, caps)
        dtype_sensitive = n.op == "Cast" or not _COMPLEX.isdisjoint(n.input_dtypes)
        if dtype_sensitive:
            return OpPrecision(
                n.input_dtypes,
                n.output_dtypes,
                "Cast is dtype-sensitive: keeps its own source and target dtypes"
                if n.op == "Cast"
                else "complex inputs are dtype-sensitive: original dtypes kept",
                policy,
                impl,
            )
        got: tuple[str, str, str] | None
        if n.keep_dtype and strategy != "MUST_KEEP":
            got = _allow_to_low(orig, sup, False, FP16, "ALLOW_FP32_TO_FP16", "keep_dtype_scope")
            return self._same(n, orig, got[0], got[2] + " (_keep_dtype overrides " + label + ")", policy, impl, got[1])
        if strategy in ("MIX_FP16", "MIX_BF16"):
            follow = None
            if policy == "gray":
                follow = followed[0] if followed is not None else self._producer_dtype(n, decided)
            key: tuple[Any, ...] = (n.op, orig, follow)
            if key in self._choices:
                got = self._choices[key]
            else:
                got = self._choices[key] = self._mixed(
                    n, orig, sup, caps, strategy, policy or "gray", policy_why, follow
                )
            if got is None:
                return self._ai_cpu_fallback(n, orig, caps, f"{label} ({policy} list)", policy, impl)
            return self._same(n, orig, got[0], got[2], policy, impl, got[1])
        key = (n.op, orig)
        got = self._choices.get(key)
        if got is None:
            got = self._choice(orig, sup, caps, strategy, label)
            if got is None:
                return self._ai_cpu_fallback(n, orig, caps, label, None, impl)
            self._choices[key] = got
        return self._same(n, orig, got[0], got[2], policy, impl, got[1])

    def _choice(
        self, orig: str, sup: frozenset[str], caps: OpCaps, strategy: str, label: str
    ) -> tuple[str, str, str] | None:
        """(input dtype, output dtype, reason) of a non-mixed strategy; None: no AI Core match."""
        if strategy == "FORCE_FP16":
            got: tuple[str, str, str] | None = _force_fp16(orig, sup)
        elif strategy == "ALLOW_FP32_TO_FP16":
            got = _allow_to_low(orig, sup, caps.cube, FP16, strategy, label)
        elif strategy == "ALLOW_FP32_TO_BF16":
            got = _allow_to_low(orig, sup, False, BF16, strategy, label)
        elif strategy == "FORCE_FP32":
            got = _force_fp32(orig, sup, caps.cube)
        else:  # MUST_KEEP and unknown strategies keep the original precision
            got = _must_keep(orig, sup, label)
        return got

    def _mixed(
        self,
        n: Node,
        orig: str,
        sup: frozenset[str],
        caps: OpCaps,
        strategy: str,
        policy: str,
        policy_why: str,
        follow: str | None,
    ) -> tuple[str, str, str] | None:
        target = FP16 if strategy == "MIX_FP16" else BF16
        label = self.mode.name
        if policy == "white":
            if target in sup:
                return target, target, f"{policy_why}: runs in {target} under {label}"
            return orig, orig, f"{policy_why}, but the AI Core has no {target} kernel: kept {orig}"
        if policy == "black":
            return _must_keep(orig, sup, f"{policy_why}: keeps its original precision under {label}")
        if follow is None:
            got = _allow_to_low(
                orig,
                sup,
                caps.cube,
                target,
                "ALLOW_FP32_TO_FP16" if target == FP16 else "ALLOW_FP32_TO_BF16",
                f"{label} for a GeOp input",
            )
            return got[0], got[1], f"{policy_why}, no producer inside the GeOp: {got[2]}"
        dtype = _rise(follow, sup) or _reduce(follow, sup, _forbidden(strategy, follow))
        if dtype is None:
            return orig, orig, f"{policy_why}: no kernel matches its producer's {follow}: kept {orig}"
        return dtype, dtype, f"{policy_why}: follows its producer's {follow} under {label}"

    def _ai_cpu_fallback(
        self, n: Node, orig: str, caps: OpCaps, label: str, policy: str | None, impl: str | None
    ) -> OpPrecision:
        if orig in caps.aicpu_dtypes:
            d = self._same(
                n,
                orig,
                orig,
                f"{orig} has no AI Core kernel under {label}: falls back to the AI CPU kernel in {orig}",
                policy,
                impl,
            )
            d.engine = "AI_CPU"
            return d
        if policy == "black":
            self.errors.append(f"{n.name} ({caps.ir_type}) is in blacklist but doesn't support it's original dtype")
        else:
            self.errors.append(
                f"{n.name} ({caps.ir_type}): no AI Core or AI CPU kernel supports {orig} under "
                f"{label}: the graph fails to compile"
            )
        return self._same(n, orig, orig, f"no kernel supports {orig} under {label}: compile error", policy, impl)

    def _same(
        self, n: Node, orig: str, din: str, reason: str, policy: str | None, impl: str | None, dout: str | None = None
    ) -> OpPrecision:
        """Apply one decided dtype to every tensor of the op's original float dtype.

        Most ops keep their dtype: the answer holds the node's own read-only lists then, and a changed
        list is the one shared list of its dtypes; the decisions hold either as it is
        (:func:`~npu_jupyter._plan.planner._decisions`).
        """
        dout = din if dout is None else dout
        ins = n.input_dtypes if din == orig else dtype_list(tuple(din if d == orig else d for d in n.input_dtypes))
        outs = n.output_dtypes if dout == orig else dtype_list(tuple(dout if d == orig else d for d in n.output_dtypes))
        return OpPrecision(ins, outs, reason, policy, impl)

    def _customized(self, n: Node, rule: DtypeRule, impl: str | None) -> OpPrecision:
        ins = list(n.input_dtypes)
        outs = list(n.output_dtypes)
        for k, d in enumerate(rule.inputs):
            if d is not None and k < len(ins):
                ins[k] = d
        for k, d in enumerate(rule.outputs):
            if d is not None and k < len(outs):
                outs[k] = d
        reason = f"customize_dtypes line {rule.line}: {rule.text}"
        return OpPrecision(dtype_list(tuple(ins)), dtype_list(tuple(outs)), reason, None, impl)


def decide_precision(
    view: GraphView, device: list[bool], cluster_of: list[str | None], lib: OpLibrary, s: PlanSettings
) -> PrecisionResult:
    """Decided input/output dtypes and reasons for every node, in topological order."""
    d = _Decider(view, device, cluster_of, lib, s)
    decided: list[OpPrecision | None] = [None] * len(view.order)
    for n in view.order:
        decided[n.index] = d.decide(n, decided)
    # the loop fills every index: no entry is None any more
    return PrecisionResult(d.mode, cast("list[OpPrecision]", decided), d.errors, d.warnings)
