"""The emulated TF2 adapter (npu_device): opt-in, the adapter's options and errors, one device, one rank.

Runs on both legs: TensorFlow 2.16+ with Keras 3 (and tf_keras), and the legacy leg's TensorFlow 2.6.5
with its own Keras 2. Tests that need traced functions emulated (TF >= 2.14) say so and skip there.
"""

from __future__ import annotations

import contextlib
import re
import sys

import numpy as np
import pytest
from tf2_options_double import Config as DoubleConfig
from tf2_options_double import _tree as adapter_tree

from npu_jupyter import adapter
from npu_jupyter._runtime.functions import emulator as functions
from npu_jupyter.adapter.surface import NotEmulatedError

tf = pytest.importorskip("tensorflow")

needs_functions = pytest.mark.skipif(
    not functions.supported(), reason="emulating traced functions needs TensorFlow >= 2.14 (AtomicFunction)"
)


@pytest.fixture
def npu(no_adapter, monkeypatch):
    """The emulated ``npu_device`` module, one rank; everything put back after the test."""
    monkeypatch.delenv("RANK_SIZE", raising=False)
    monkeypatch.delenv("CM_WORKER_SIZE", raising=False)
    monkeypatch.delenv("ASCEND_DEVICE_ID", raising=False)
    adapter.emulate_adapter()
    import npu_device

    yield npu_device
    adapter.uninstall()


def _double_leaves(node, prefix=""):
    for name, child in node._options.items():
        if isinstance(child, DoubleConfig):
            yield from _double_leaves(child, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", child


# ------------------------------------------------------------------------------------ opt-in, modules


def test_npu_device_is_not_importable_until_emulated(no_adapter):
    with pytest.raises(ImportError):
        import npu_device  # noqa: F401


def test_a_real_tf2_adapter_is_never_shadowed(no_adapter, tmp_path, monkeypatch):
    (tmp_path / "npu_device").mkdir()
    (tmp_path / "npu_device" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="npu_device\\) is installed here.*never shadows"):
        adapter.emulate_adapter()
    assert not adapter.is_emulated() and "npu_device" not in sys.modules


def test_every_public_name_of_the_adapter_top_level_is_there(npu):
    for name in (
        "open",
        "global_options",
        "set_npu_loop_size",
        "npu_run_context",
        "set_device_sat_mode",
        "is_inf_nan_enabled",
        "npu_compat_function",
        "gen_npu_ops",
        "keep_dtype_scope",
        "npu_recompute_scope",
        "distribute",
        "train",
        "ops",
        "compat",
        "configs",
    ):
        assert hasattr(npu, name), name
    from npu_device import gen_npu_ops  # noqa: F401 - scripts import it this way
    from npu_device.train.optimizer import NpuLossScaleOptimizer  # noqa: F401


def test_a_name_not_emulated_fails_naming_itself_why_and_what_to_do(npu):
    from npu_device import gen_npu_ops

    with pytest.raises(
        NotEmulatedError, match=r"npu_device\.gen_npu_ops\.lars_v2 is part of the Ascend adapter.*fused"
    ):
        gen_npu_ops.lars_v2(1.0, 1.0, 0.0, 0.1)  # importable, as in the adapter; using it fails
    with pytest.raises(NotEmulatedError, match=r"float-status.*tf\.math\.is_finite"):
        npu.gen_npu_ops.npu_get_float_status_v2()
    namespace: dict = {}
    exec("from npu_device.gen_npu_ops import *", namespace)
    with pytest.raises(NotEmulatedError, match="basic_lstm_cell is part of the Ascend adapter"):
        namespace["basic_lstm_cell"]()
    with pytest.raises(
        NotEmulatedError, match=r"npu_device\.npu_device is part of the Ascend adapter.*internal module"
    ):
        import npu_device.npu_device  # noqa: F401
    with pytest.raises(AttributeError, match="emulates"):
        npu.no_such_name


def test_the_tf1_adapter_is_reachable_as_compat_v1(npu):
    namespace: dict = {}
    exec("from npu_device.compat.v1.npu_init import *", namespace)
    assert namespace["NPURunConfig"] is sys.modules["npu_bridge.npu_init"].NPURunConfig
    builder = npu.compat.v1.SessionConfigBuilder()
    builder.parameter_map["precision_mode"].s = b"allow_mix_precision"
    optimizers = builder.session_config.graph_options.rewrite_options.custom_optimizers
    assert [o.name for o in optimizers] == ["NpuOptimizer"]
    assert builder.session_config.allow_soft_placement


# ------------------------------------------------------------------------------------ global_options


def test_global_options_has_every_option_of_the_adapter_with_its_default_and_allowed_values(npu):
    from npu_jupyter.adapter.tf2.options import leaves

    ours = {path: (o.default, o.optional) for path, o in leaves(npu.global_options())}
    theirs = {path: (o.default, o.optional) for path, o in _double_leaves(adapter_tree())}
    assert set(ours) == set(theirs), sorted(set(ours) ^ set(theirs))
    for path, (default, optional) in theirs.items():
        assert ours[path][0] == default and type(ours[path][0]) is type(default), path
        assert (list(ours[path][1]) if ours[path][1] is not None else None) == (
            list(optional) if optional is not None else None
        ), path


def test_values_the_adapter_refuses_raise_its_errors_and_change_nothing(npu):
    options = npu.global_options()
    with pytest.raises(ValueError, match="NpuConfig has no option auto_tune_mode, all options"):
        options.auto_tune_mode = "RL,GA"  # the ModelZoo scripts' --auto_tune flag
    with pytest.raises(ValueError, match="'fp17' not in optional list"):
        options.precision_mode = "fp17"
    with pytest.raises(TypeError, match="Expected int, got str"):
        options.deterministic = "1"
    with pytest.raises(ValueError, match="NpuDumpConfig has no option path"):
        options.dump_config.path = "/tmp"
    assert options.precision_mode.value is None and options.deterministic.value == "0"


def test_open_reads_the_options_once_into_the_effective_config(npu, tmp_path):
    options = npu.global_options()
    options.precision_mode = "allow_mix_precision"
    options.dump_config.enable_dump = True
    options.dump_config.dump_path = str(tmp_path)
    options.dump_config.dump_step = "0|2"
    options.memory_config.atomic_clean_policy = 1
    handle = npu.open()
    expected = {
        "precision_mode": "allow_mix_precision",
        "enable_dump": True,
        "dump_path": str(tmp_path),
        "dump_step": "0|2",
        "atomic_clean_policy": 1,
    }
    assert handle.config.changed() == expected
    options.precision_mode = "force_fp32"  # after open(): the device keeps what it opened with
    assert npu.open() is handle and handle.config.precision_mode == "allow_mix_precision"
    with pytest.raises(RuntimeError, match="Failed create npu instance on device 1 as existed instance on \\[0\\]"):
        npu.open(1)
    assert handle.name() == "/job:localhost/replica:0/task:0/device:NPU:0"


def test_an_option_only_the_tf2_adapter_has_is_kept_and_named_as_not_read(npu):
    npu.global_options().overflow_flag = 0
    with pytest.warns(UserWarning, match="no emulated decision reads them: overflow_flag"):
        handle = npu.open()
    assert handle.unread == ["overflow_flag"]
    assert npu.global_options().as_dict()["overflow_flag"] == "0"


def test_a_value_the_adapter_takes_but_the_device_refuses_fails_at_open(npu):
    npu.global_options().dump_config.dump_step = "0|x"  # no optional list in the adapter; the device checks
    with pytest.raises(RuntimeError, match="Failed open npu device 0 : .*dump_step"):
        npu.open()


def test_a_missing_dump_folder_fails_at_open_with_nothing_opened(npu, tmp_path):
    """The device's GEInitialize checks dump_path at open (the ModelZoo's ``--over_dump_path`` typo case)."""
    from npu_jupyter.adapter.tf2 import device as tf2_device

    function_before = tf.function
    npu.global_options().dump_config.enable_dump_debug = True
    npu.global_options().dump_config.dump_path = str(tmp_path / "missing")
    with pytest.raises(RuntimeError, match="Failed open npu device 0 : the path .*missing is invalid"):
        npu.open().as_default()
    assert tf2_device.global_npu_ctx() is None and tf2_device.effective_config() is None
    assert tf.function is function_before  # as_default() never ran: tf.function not patched
    (tmp_path / "missing").mkdir()  # fixed: the same script line now opens the device
    assert npu.open().config.changed()["dump_path"] == str(tmp_path / "missing")


def test_deprecated_options_warn_as_the_adapter_does(npu, capsys):
    npu.global_options().op_select_implmode = "high_precision"
    npu.global_options().as_dict()
    assert "Option 'op_select_implmode' is deprecated" in capsys.readouterr().out


# ------------------------------------------------------------------------------------ one device, one rank


def test_more_than_one_rank_is_refused_clearly(npu, monkeypatch):
    monkeypatch.setenv("RANK_SIZE", "8")
    with pytest.raises(RuntimeError, match="rank size is 8.*one device.*RANK_SIZE"):
        npu.open()
    with pytest.raises(RuntimeError, match="all_reduce: the rank size is 8"):
        npu.distribute.all_reduce([tf.constant(1.0)])


def test_distribute_is_the_identity_for_one_rank(npu):
    value = tf.constant([1.0, 2.0])
    assert npu.distribute.all_reduce([value], "sum")[0] is value
    assert npu.distribute.all_reduce(value) is value
    variable = tf.Variable([3.0])
    assert npu.distribute.broadcast([variable], root_rank=0) is None
    assert variable.numpy().tolist() == [3.0]
    dataset = tf.data.Dataset.range(4)
    assert npu.distribute.shard_and_rebatch_dataset(dataset, 32) == (dataset, 32)
    optimizer = tf.keras.optimizers.SGD(0.1)
    assert npu.distribute.npu_distributed_keras_optimizer_wrapper(optimizer) is optimizer
    applied = []
    npu.distribute.grouping_gradients_apply(applied.extend, [(value, variable)])
    assert applied == [(value, variable)]


def test_loop_size_run_context_and_sat_mode(npu):
    from npu_jupyter.adapter.tf2 import device as tf2_device

    npu.set_npu_loop_size(10)
    assert tf2_device.npu_loop_size() == 10
    with pytest.raises(ValueError, match="positive int"):
        npu.set_npu_loop_size(0)
    options = npu.configs.run_context_options()
    options.experimental.graph_memory_optimize_config.recompute = "manual"
    with pytest.raises(ValueError, match="not in optional list"):
        options.experimental.graph_memory_optimize_config.recompute = "always"
    with npu.npu_run_context(options):
        assert tf.constant(1.0).numpy() == 1.0
    with pytest.raises(ValueError, match="options type must be NpuRunContextOptions"), npu.npu_run_context({}):
        pass
    assert npu.is_inf_nan_enabled()
    npu.set_device_sat_mode(0)
    assert not npu.is_inf_nan_enabled()


def test_scopes_stamp_the_tf2_adapter_attributes(npu):
    graph = tf.Graph()
    with graph.as_default():
        with npu.keep_dtype_scope():
            kept = tf.constant(1.0, name="kept")
        with npu.npu_recompute_scope():
            recomputed = tf.constant(2.0, name="recomputed")
    assert kept.op.get_attr("_keep_dtype") == 1
    assert recomputed.op.get_attr("_recompute") is True


# ------------------------------------------------------------------------------------ ops


def _run_graph(fn):
    """``fn`` traced once as a tf.function (graph mode, where the adapter's ops run) and called."""
    return tf.function(fn)()


def test_dropout_ops_keep_with_probability_and_scale(npu):
    ops = npu.gen_npu_ops
    x = tf.ones([4000])

    def dropped():
        mask = ops.drop_out_gen_mask(tf.shape(x), 0.25, 0, 0)
        return ops.drop_out_do_mask(x, mask, 0.25)

    out = _run_graph(dropped).numpy()
    assert set(np.unique(out).tolist()) <= {0.0, 4.0}
    assert 0.2 < float(np.mean(out > 0)) < 0.3
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = ops.drop_out_do_mask(x, ops.drop_out_gen_mask(tf.shape(x), 1.0, 0, 0), 1.0)
    assert tape.gradient(y, x).numpy().tolist() == [1.0] * 4000


def test_fast_gelu_is_the_cann_formula_and_ops_gelu_is_exact_when_eager(npu):
    x = np.linspace(-6, 6, 25).astype(np.float32)
    cann = x / (1 + np.exp(-1.702 * np.abs(x))) * np.exp(0.851 * (x - np.abs(x)))
    np.testing.assert_allclose(npu.gen_npu_ops.fast_gelu(x).numpy(), cann, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(npu.ops.gelu(tf.constant(x)).numpy(), tf.nn.gelu(x).numpy(), rtol=1e-5, atol=1e-6)
    in_graph = _run_graph(lambda: npu.ops.gelu(tf.constant(x))).numpy()
    np.testing.assert_allclose(in_graph, cann, rtol=1e-5, atol=1e-6)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = npu.gen_npu_ops.fast_gelu(xt)
    np.testing.assert_allclose(
        tape.gradient(y, xt).numpy(), npu.gen_npu_ops.fast_gelu_grad(tf.ones_like(xt), xt).numpy(), rtol=1e-5
    )


# ------------------------------------------------------------------------------------ loss scaling


@contextlib.contextmanager
def _keras(which):
    """``tf.keras`` as it is ("default") or tf_keras (Keras 2 on TensorFlow >= 2.16) for the block."""
    if which == "default":
        yield
        return
    tf_keras = pytest.importorskip("tf_keras")
    saved = tf.__dict__.get("keras")
    tf.keras = tf_keras
    try:
        yield
    finally:
        tf.keras = saved


def _scale(optimizer):
    scale = getattr(optimizer, "dynamic_scale", None)  # Keras 3
    return float((scale if scale is not None else optimizer.loss_scale).numpy())


TF_VERSION = tuple(int(part) for part in re.findall(r"\d+", tf.__version__)[:2])
KERAS = ["default", "tf_keras"] if TF_VERSION >= (2, 16) else ["default"]  # Keras 3 and tf_keras, or Keras 2


@pytest.mark.parametrize("keras", KERAS)
def test_dynamic_loss_scale_skips_overflowing_steps_and_moves_the_scale(npu, keras):
    with _keras(keras):
        from npu_jupyter.adapter.tf2.loss_scale import _build_class

        npu_lso = _build_class()
        variable = tf.Variable([1.0, 1.0])
        opt = npu_lso(tf.keras.optimizers.SGD(1.0), dynamic=True, initial_scale=8.0, dynamic_growth_steps=2)
        assert isinstance(opt, npu_lso) and isinstance(opt, tf.keras.mixed_precision.LossScaleOptimizer)
        opt.apply_gradients([(tf.constant([np.inf, 1.0]), variable)])
        assert variable.numpy().tolist() == [1.0, 1.0] and _scale(opt) == 4.0  # skipped, halved
        opt.apply_gradients([(tf.constant([0.0, 0.0]), variable)])
        assert _scale(opt) == 4.0
        opt.apply_gradients([(tf.constant([0.0, 0.0]), variable)])
        assert _scale(opt) == 8.0  # doubled after dynamic_growth_steps finite steps
        assert not bool(opt.last_step_finite.numpy())  # only the saturation-mode device path assigns it


@pytest.mark.parametrize("keras", KERAS)
def test_fixed_loss_scale_never_moves_and_applies_every_step(npu, keras):
    with _keras(keras):
        from npu_jupyter.adapter.tf2.loss_scale import _build_class

        npu_lso = _build_class()
        with pytest.raises(ValueError, match="initial_scale"):
            npu_lso(tf.keras.optimizers.SGD(1.0), dynamic=False)
        variable = tf.Variable([1.0])
        opt = npu_lso(tf.keras.optimizers.SGD(1.0), dynamic=False, initial_scale=16.0)
        opt.apply_gradients([(tf.constant([0.0]), variable)])
        opt.apply_gradients([(tf.constant([np.inf]), variable)])
        assert _scale(opt) == 16.0
        assert not np.isfinite(variable.numpy()[0])  # applied although not finite, as Keras 2's fixed scale


def test_the_loss_scale_optimizer_is_built_on_the_keras_in_use(npu):
    optimizer = npu.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.SGD(1.0))
    assert isinstance(optimizer, tf.keras.mixed_precision.LossScaleOptimizer)
    assert isinstance(optimizer, npu.train.optimizer.NpuLossScaleOptimizer)
    assert type(optimizer).__name__ == "NpuLossScaleOptimizer"


# ------------------------------------------------------------------------------------ the device emulates


@needs_functions
def test_as_default_emulates_every_traced_function_under_the_opened_options(npu):
    from npu_jupyter.adapter.tf2 import device as tf2_device

    npu.global_options().precision_mode = "allow_mix_precision"
    npu.open().as_default()

    @tf.function
    def inner(x):
        return tf.matmul(x, x)

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    assert outer(tf.ones([4, 4])).numpy()[0, 0] == 5.0
    reports = tf2_device.device_reports()
    assert len(reports) == 1 and reports[0].steps == 1
    report = reports[0]
    assert report.plan.config_changes == {"precision_mode": "allow_mix_precision"}
    # the adapter inlines a tf.function called while another traces: inner's MatMul is outer's
    assert "MatMul" in {d.op_type for d in report.plan.ops.values()}
    assert "MatMul" in report.emulation  # rounded, and named as an op of outer itself
    assert report.function.functions == (report.fetches[0],)


@needs_functions
def test_turning_the_emulation_off_closes_the_device_and_restores_tf_function(npu):
    from tensorflow.python.eager import def_function

    from npu_jupyter.adapter.tf2 import device as tf2_device

    call, decorator = def_function.Function.__call__, tf.function
    npu.open().as_default()
    assert def_function.Function.__call__ is not call and tf.function is npu.npu_compat_function
    assert not tf.function(lambda: tf.constant(1.0), jit_compile=True)._jit_compile  # the device has no XLA
    adapter.uninstall()
    assert def_function.Function.__call__ is call and tf.function is decorator
    assert tf2_device.global_npu_ctx() is None and tf2_device.effective_config() is None
    assert tf.function(lambda: tf.constant(2.0))().numpy() == 2.0


@needs_functions
def test_a_npu_cell_runs_under_the_device_options_with_its_own_flags_winning(ip, emulated_shell):
    from npu_jupyter._notebook.state import last_reports

    code = (
        "import npu_device\n"
        "import tensorflow as tf\n"
        "npu_device.global_options().precision_mode = 'allow_mix_precision'\n"
        "npu_device.global_options().memory_config.atomic_clean_policy = 1\n"
        "npu_device.open().as_default()\n"
        "f = tf.function(lambda x: tf.matmul(x, x))\n"
        "y = f(tf.ones([2, 2]))\n"
    )
    ip.run_cell_magic("npu", "--precision force_fp32 --quiet", code)
    (report,) = last_reports()
    assert report.plan.config_changes == {"precision_mode": "force_fp32", "atomic_clean_policy": 1}
    # the device stays open: the next cell takes its options, under that cell's flags
    ip.run_cell_magic("npu", "--quiet", "y = f(tf.ones([2, 2]))\n")
    (report,) = last_reports()
    assert report.plan.config_changes == {"precision_mode": "allow_mix_precision", "atomic_clean_policy": 1}


#: A script's opening lines: mixed precision set through global_options(), the device made default.
OPEN_MIXED = (
    "import npu_device\n"
    "import tensorflow as tf\n"
    "npu_device.global_options().precision_mode = 'allow_mix_precision'\n"
    "npu_device.open().as_default()\n"
)


@needs_functions
def test_a_device_a_cell_made_default_stays_the_default_for_later_plain_cells(ip, emulated_shell):
    """As on the adapter (and as after ``as_default()`` outside a cell): a plain cell's function runs emulated."""
    from npu_jupyter.adapter.tf2 import device as tf2_device

    code = OPEN_MIXED + "f = tf.function(lambda x: tf.matmul(x, x))\ny = f(tf.ones([2, 2]))\n"
    ip.run_cell_magic("npu", "--quiet", code)
    assert tf2_device.device_reports() == []  # the cell's call is the cell's report, not the device's
    result = ip.run_cell("z = f(tf.ones([2, 2]))\n")  # a plain cell, no %%npu
    assert result.success
    (report,) = tf2_device.device_reports()
    assert report.steps == 1 and report.plan.config_changes == {"precision_mode": "allow_mix_precision"}
    assert tf2_device.effective_config().precision_mode == "allow_mix_precision"
    ip.run_cell_magic("npu", "--quiet", "y = f(tf.ones([2, 2]))\n")  # pauses it for the cell, resumes after
    assert tf2_device.effective_config() is not None and len(tf2_device.device_reports()) == 1
    adapter.uninstall()
    assert tf2_device.effective_config() is None  # the device is closed with the emulation


@needs_functions
def test_a_npu_cell_after_a_device_opened_outside_cells_reports_its_functions(ip, emulated_shell):
    """The device's emulation pauses for the cell's and resumes after it, nested, not interleaved."""
    from npu_jupyter._notebook.state import last_reports
    from npu_jupyter.adapter.tf2 import device as tf2_device

    opened = ip.run_cell(
        OPEN_MIXED + "def square(x):\n    return tf.matmul(x, x)\nf = tf.function(square)\ny = f(tf.ones([2, 2]))\n"
    )  # a plain cell: the device emulates outside %%npu cells
    assert opened.success and len(tf2_device.device_reports()) == 1
    ip.run_cell_magic("npu", "--precision force_fp32 --quiet", "y = f(tf.ones([2, 2]))\n")
    (report,) = last_reports()  # the cell's own emulation ran the call, under the cell's flag
    assert report.function.label == "square" and report.steps == 1
    assert report.plan.config_changes == {"precision_mode": "force_fp32"}
    assert ip.run_cell("y = f(tf.ones([2, 2]))\n").success
    # one report of the function: the call before the cell and the one after it, not one report each
    assert [r.steps for r in tf2_device.device_reports()] == [2]


@needs_functions
def test_a_device_paused_for_a_cell_counts_each_function_in_its_one_report(ip, emulated_shell):
    """After the pause each function goes on in its own report, emulated; the cell's calls are the cell's only."""
    from npu_jupyter._notebook.state import last_reports
    from npu_jupyter.adapter.tf2 import device as tf2_device

    before = (
        "def square(x):\n    return tf.matmul(x, x)\n"
        "def double(x):\n    return x + x\n"
        "f, g = tf.function(square), tf.function(double)\n"
        "one = tf.constant([[1.0001]])\n"
        "a, b = f(one), g(one)\n"
    )
    assert ip.run_cell(OPEN_MIXED + before).success
    ip.run_cell_magic("npu", "--precision must_keep_origin_dtype --quiet", "c, d = f(one), g(one)\n")
    assert ip.user_ns["c"].numpy()[0, 0] == pytest.approx(1.0002, abs=1e-6)  # the cell's float32, not the device's
    assert sorted((r.function.label, r.steps) for r in last_reports()) == [("double", 1), ("square", 1)]
    assert sorted((r.function.label, r.steps) for r in tf2_device.device_reports()) == [
        ("double", 1),
        ("square", 1),
    ]
    assert ip.run_cell("e = f(one)\n").success
    reports = {r.function.label: r for r in tf2_device.device_reports()}
    assert {label: r.steps for label, r in reports.items()} == {"square": 2, "double": 1}
    assert reports["square"].timing.total_ms > 0 and reports["double"].timing.first_ms is not None
    # after the pause the device's rewrite runs again: MatMul reads 1.0001 stored in float16 (1.0)
    assert ip.user_ns["e"].numpy()[0, 0] == 1.0 and ip.user_ns["a"].numpy()[0, 0] == 1.0


@needs_functions
def test_npu_after_a_cell_opened_the_device_shows_the_options_functions_run_under(ip, emulated_shell):
    ip.run_cell_magic("npu", "--quiet", OPEN_MIXED)
    text = repr(ip.run_line_magic("npu", ""))
    assert "the adapter's defaults apply" not in text  # the next cell's functions run mixed precision
    assert "npu_device opened by your code with" in text and "precision_mode = 'allow_mix_precision'" in text
    adapter.uninstall()
    assert "npu_device" not in repr(ip.run_line_magic("npu", ""))  # the device is closed with the emulation


@needs_functions
def test_the_device_overflow_check_says_it_ran_and_found_nothing_outside_and_inside_cells(ip, emulated_shell, tmp_path):
    """Trial (a ModelZoo script's over-dump options): with no overflow, no report said the check ran."""
    from npu_jupyter._notebook.state import last_reports
    from npu_jupyter.adapter.tf2 import device as tf2_device

    dump = (
        "dump = npu_device.global_options().dump_config\n"
        f"dump.enable_dump_debug, dump.dump_path, dump.dump_debug_mode = True, {str(tmp_path)!r}, 'all'\n"
    )
    script = OPEN_MIXED.replace("npu_device.open()", dump + "npu_device.open()")
    assert ip.run_cell(
        script + "f = tf.function(lambda x: tf.matmul(x, x))\na, b = f(tf.ones([2, 2])), f(tf.ones([2, 2]))\n"
    ).success
    (report,) = tf2_device.device_reports()
    assert report.first_overflow is None and report.overflow_check.checked == 2
    assert "Overflow check: no inf/NaN in 2 calls (emulated float16" in str(report)
    ip.run_cell_magic("npu", "--quiet", "c = f(tf.ones([2, 2]))\n")  # the cell takes the device's options
    (cell,) = last_reports()
    assert cell.overflow_check.checked == 1 and "no inf/NaN in 1 call (" in str(cell)
    assert ip.run_cell("d = f(tf.ones([2, 2]))\n").success
    assert [r.overflow_check.checked for r in tf2_device.device_reports()] == [3]  # the one report goes on
