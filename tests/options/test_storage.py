"""Atomic writes and whole-or-nothing reads of saved configs."""

from __future__ import annotations

import os

import pytest

from npu_jupyter._options import storage
from npu_jupyter._options.errors import NpuConfigError


def test_write_atomic_leaves_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "c.json"
    storage.write_atomic(target, "old")

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        storage.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_dump_and_read_options_round_trip(tmp_path):
    path = storage.dump_options(tmp_path / "deep" / "c.json", {"precision_mode": "force_fp16"})
    assert storage.read_options(path) == {"precision_mode": "force_fp16"}


def test_read_options_names_the_file_on_errors(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("[1, 2]")
    with pytest.raises(NpuConfigError, match="c.json"):
        storage.read_options(path)


def test_write_atomic_writes_bytes_verbatim_and_text_as_utf8_without_leftovers(tmp_path):
    storage.write_atomic(tmp_path / "blob.pkl", b"\x00\xff\r\n")
    storage.write_atomic(tmp_path / "text.csv", "a,b\r\nμ\n")
    assert (tmp_path / "blob.pkl").read_bytes() == b"\x00\xff\r\n"
    assert (tmp_path / "text.csv").read_bytes() == "a,b\r\nμ\n".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blob.pkl", "text.csv"]


def test_a_file_that_is_not_utf8_is_one_config_error_naming_it(tmp_path):
    path = tmp_path / "c.json"
    path.write_bytes(b'{"dump_path": "\xff"}')
    with pytest.raises(NpuConfigError, match="c.json.*not UTF-8"):
        storage.read_options(path)


def test_a_path_with_a_nul_is_one_config_error(tmp_path):
    with pytest.raises(NpuConfigError, match="cannot read NPU config file"):
        storage.read_options(str(tmp_path / "c\x00.json"))
