"""The GE graph-dump reader, on dumps written by hand from ge_ir.proto (tests/runtime/data/ge_dump)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from npu_jupyter._runtime.ascend import ge_dump
from npu_jupyter._runtime.ascend.ge_dump import GeDumpError, parse_text_proto, read_ge_dump

DATA = Path(__file__).with_name("data") / "ge_dump"
BUILD = DATA / "ge_proto_00000001_Build.txt"


def test_a_build_dump_gives_each_ops_engine_dtypes_and_original_names():
    [graph] = read_ge_dump(str(BUILD))
    assert graph.name == "GeOp1_0"
    ops = {op.name: op for op in graph.ops}
    assert [op.name for op in graph.ops] == ["x", "x_cast_fp16", "mm_y_fused", "total", "Node_Output"]
    fused = ops["mm_y_fused"]
    assert (fused.engine, fused.op_type, fused.original_names) == ("AI_CORE", "MatMulV2", ["mm", "y"])
    assert fused.input_dtypes == ["float16", "float16"] and fused.output_dtypes == ["float16"]
    assert (ops["total"].engine, ops["total"].output_dtypes) == ("AI_CPU", ["float32"])
    assert ops["x"].engine == "GE" and ops["Node_Output"].output_dtypes == []


@pytest.mark.parametrize(
    "lib, engine",
    [
        ("AIcoreEngine", "AI_CORE"),
        ("aicpu_tf_kernel", "AI_CPU"),
        ("aicpu_ascend_kernel", "AI_CPU"),
        ("DNN_VM_GE_LOCAL_OP_STORE", "GE"),
        ("DNN_VM_RTS_OP_STORE", "GE"),
        ("DNN_VM_HOST_CPU_OP_STORE", "HOST"),
        ("dvpp_ops_kernel", "DVPP"),
        ("ops_kernel_info_hccl", "HCCL"),
        ("", "UNKNOWN"),
        ("mystery", "UNKNOWN"),
    ],
)
def test_kernel_libraries_name_their_engine(lib, engine):
    assert ge_dump.engine_of(lib) == engine


def test_text_format_escapes_lists_comments_and_angle_brackets_are_read():
    text = r"""
    # a comment line
    name: "\346\227\245 \"q\"\n" "tail"
    op < name: 'a\x41' id: -3 >
    op { name: "b" ; flag: true size: 1.5 }
    vals: [1, 2, 0x10]
    dtype: DT_FLOAT16
    """
    message = parse_text_proto(text)
    assert message["name"] == ['日 "q"\ntail']
    assert [op["name"][0] for op in message["op"]] == ["aA", "b"]
    assert message["op"][0]["id"] == [-3] and message["op"][1]["flag"] == [True] and message["op"][1]["size"] == [1.5]
    assert message["vals"] == [1, 2, 16] and message["dtype"] == ["DT_FLOAT16"]


@pytest.mark.parametrize(
    "text, message",
    [
        ('graph { op { name: "a" }', "ends inside a message"),
        ("graph { } }", "unbalanced"),
        ('name: "open', "cannot read"),
        ("{ name: 1 }", "expected a field name"),
        ("graph", "has no value"),
    ],
)
def test_a_broken_dump_is_one_error_naming_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "ge_proto_00000002_Build.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GeDumpError, match=message) as info:
        read_ge_dump(str(path))
    assert str(path) in str(info.value)


def test_the_error_names_the_line_of_the_problem():
    with pytest.raises(GeDumpError, match="line 4: cannot read"):
        parse_text_proto('graph {\n  op {\n    name: "a"\n    type: "unterminated\n  }\n}\n', source="f.txt")


def test_a_dump_too_large_to_read_is_refused_with_the_fix(tmp_path, monkeypatch):
    path = tmp_path / "ge_proto_00000003_Build.txt"
    path.write_text('name: "m"\n' + "# padding\n" * 100, encoding="utf-8")
    monkeypatch.setattr(ge_dump, "MAX_DUMP_BYTES", 64)
    with pytest.raises(GeDumpError, match="too large to read here.*DUMP_GE_GRAPH=2"):
        read_ge_dump(str(path))


def test_dtype_enums_may_be_printed_as_numbers():
    assert ge_dump._dtype_name(2) == "float16" and ge_dump._dtype_name(27) == "bfloat16"
    assert ge_dump._dtype_name("DT_INT32") == "int32"


def test_only_build_stage_dumps_newer_than_the_session_are_read(tmp_path):
    for name in ("ge_proto_00000001_Build.txt", "ge_proto_00000001_PreRunBegin.txt"):
        shutil.copy(DATA / name, tmp_path / name)
    old = tmp_path / "ge_proto_00000000_Build.txt"
    shutil.copy(BUILD, old)
    os.utime(old, (1_000_000, 1_000_000))
    found = ge_dump.build_dumps(str(tmp_path), since=2_000_000)
    assert found == [str(tmp_path / "ge_proto_00000001_Build.txt")]


def test_the_dump_directory_follows_the_environment(tmp_path):
    assert ge_dump.dump_directory({}) is None
    assert ge_dump.dump_directory({"DUMP_GE_GRAPH": "0"}) is None
    assert ge_dump.dump_directory({"DUMP_GE_GRAPH": "2", "DUMP_GRAPH_PATH": str(tmp_path)}) == str(tmp_path)
    assert ge_dump.dump_directory({"DUMP_GE_GRAPH": "3"}) == os.getcwd()


def test_the_reader_reads_what_protobufs_own_printer_writes_from_the_schema():
    """Build ge.proto ModelDef from the schema, print it with protobuf's text format, read it back."""
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2, descriptor_pool, text_format

    model_class = _ge_model_class(descriptor_pb2, descriptor_pool)
    model = model_class(name="m")
    graph = model.graph.add(name="g")
    op = graph.op.add(name="conv\u00e9<1>", type="Conv2D")
    op.attr["_ge_attr_op_kernel_lib_name"].s = b"AIcoreEngine"
    op.attr["_datadump_original_op_names"].list.s.extend([b"conv", b"bias"])
    op.output_desc.add(dtype=2)
    op.input_desc.add(dtype=1)
    text = text_format.MessageToString(model, as_utf8=False)
    message = parse_text_proto(text)
    [g] = message["graph"]
    [parsed] = [ge_dump._op(o) for o in g["op"]]
    assert (parsed.name, parsed.engine, parsed.original_names) == ("conv\u00e9<1>", "AI_CORE", ["conv", "bias"])
    assert (parsed.input_dtypes, parsed.output_dtypes) == (["float32"], ["float16"])


def _ge_model_class(descriptor_pb2, descriptor_pool):
    """ModelDef and what it needs of ge_ir.proto (field numbers from the schema)."""
    f = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="ge_ir_subset_test.proto", package="ge.proto", syntax="proto3")
    enum = file.enum_type.add(name="DataType")
    for name, number in (("DT_UNDEFINED", 0), ("DT_FLOAT", 1), ("DT_FLOAT16", 2)):
        enum.value.add(name=name, number=number)

    def message(name, *fields):
        msg = file.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            entry = msg.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                entry.type_name = type_name
        return msg

    rep, opt = f.LABEL_REPEATED, f.LABEL_OPTIONAL
    attr = message(
        "AttrDef",
        ("s", 2, f.TYPE_BYTES, opt, None),
        ("i", 3, f.TYPE_INT64, opt, None),
        ("list", 1, f.TYPE_MESSAGE, opt, ".ge.proto.AttrDef.ListValue"),
    )
    listvalue = attr.nested_type.add(name="ListValue")
    listvalue.field.add(name="s", number=2, type=f.TYPE_BYTES, label=rep)
    message(
        "TensorDescriptor",
        ("name", 1, f.TYPE_STRING, opt, None),
        ("dtype", 2, f.TYPE_ENUM, opt, ".ge.proto.DataType"),
        ("layout", 4, f.TYPE_STRING, opt, None),
    )
    op = message(
        "OpDef",
        ("name", 1, f.TYPE_STRING, opt, None),
        ("type", 2, f.TYPE_STRING, opt, None),
        ("input", 5, f.TYPE_STRING, rep, None),
        ("attr", 10, f.TYPE_MESSAGE, rep, ".ge.proto.OpDef.AttrEntry"),
        ("input_desc", 33, f.TYPE_MESSAGE, rep, ".ge.proto.TensorDescriptor"),
        ("output_desc", 34, f.TYPE_MESSAGE, rep, ".ge.proto.TensorDescriptor"),
    )
    entry = op.nested_type.add(name="AttrEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=f.TYPE_MESSAGE, label=opt, type_name=".ge.proto.AttrDef")
    message("GraphDef", ("name", 1, f.TYPE_STRING, opt, None), ("op", 6, f.TYPE_MESSAGE, rep, ".ge.proto.OpDef"))
    message(
        "ModelDef",
        ("name", 1, f.TYPE_STRING, opt, None),
        ("version", 2, f.TYPE_UINT32, opt, None),
        ("graph", 7, f.TYPE_MESSAGE, rep, ".ge.proto.GraphDef"),
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    descriptor = pool.FindMessageTypeByName("ge.proto.ModelDef")
    try:
        from google.protobuf.message_factory import GetMessageClass

        return GetMessageClass(descriptor)
    except ImportError:  # protobuf < 4.21
        from google.protobuf.message_factory import MessageFactory

        return MessageFactory(pool).GetPrototype(descriptor)
