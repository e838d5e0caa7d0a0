"""Atomic writes and whole-or-nothing reads of saved configs."""

from __future__ import annotations

import os

import pytest

from npu_jupyter.options import storage
from npu_jupyter.options.errors import NpuConfigError


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
