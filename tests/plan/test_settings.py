"""Config validation and option reading before planning (_plan/settings.py)."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._plan.planner import plan
from npu_jupyter._plan.settings import normalise_soc


def test_unknown_precision_mode_in_a_dict_config_raises_with_the_allowed_values(conv_net):
    with pytest.raises(NpuConfigError) as exc:
        plan(conv_net, {"precision_mode": "force_fp17"})
    assert "force_fp17" in str(exc.value) and "allow_fp32_to_fp16" in str(exc.value)
    assert "did you mean 'force_fp16'" in str(exc.value)


def test_misspelt_option_key_in_a_dict_config_raises_with_a_suggestion(conv_net):
    with pytest.raises(NpuConfigError, match="did you mean 'precision_mode'"):
        plan(conv_net, {"precison_mode": "force_fp16"})


@pytest.mark.parametrize("make", [dict, NpuConfig], ids=["dict", "NpuConfig"])
def test_broken_cross_option_rule_is_planned_and_listed_in_errors(conv_net, make):
    config = make({"mix_compile_mode": True, "iterations_per_loop": 10})
    with pytest.raises(NpuConfigError) as exc:
        NpuConfig(config).validate()
    p = plan(conv_net, config)
    assert p.ops  # a report still renders
    (error,) = [e for e in p.errors if "iterations_per_loop" in e]
    assert error.startswith(str(exc.value)) and "first sess.run" in error


def test_both_precision_modes_set_is_a_plan_error(conv_net):
    p = plan(conv_net, {"precision_mode": "force_fp16", "precision_mode_v2": "fp16"})
    assert any("cannot both be set" in e for e in p.errors)


def test_modify_mixlist_without_a_mixed_mode_is_reported_once(conv_net, tmp_path):
    mixlist = tmp_path / "mix.json"
    mixlist.write_text('{"black-list": {"to-add": ["Relu"]}}')
    p = plan(conv_net, {"precision_mode": "force_fp16", "modify_mixlist": str(mixlist)})
    assert len([e for e in p.errors if "modify_mixlist" in e]) == 1


def test_valid_config_adds_no_errors(conv_net):
    assert plan(conv_net, {"precision_mode": "allow_mix_precision"}).errors == []


@pytest.mark.parametrize(
    "spelling, table", [("Ascend910B1", "Ascend910B"), ("ascend910proa", "Ascend910"), (None, "Ascend910")]
)
def test_soc_spellings_resolve_through_the_ops_library(spelling, table):
    assert normalise_soc(spelling) == table


def test_unknown_soc_raises_naming_the_supported_spellings():
    with pytest.raises(ValueError, match="Ascend910B2C"):
        normalise_soc("Ascend310")


def test_an_atlas_a3_soc_config_plans_with_the_keep_origin_training_default():
    import tensorflow as tf

    from npu_jupyter._plan.planner import plan

    g = tf.Graph()
    with g.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [2, 2], name="a")
        tf.matmul(a, a, name="mm")
    result = plan(g, {"soc_config": "Ascend910_9391"})
    assert result.soc == "Ascend910B"
    assert result.precision_mode == "must_keep_origin_dtype"
