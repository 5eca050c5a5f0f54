"""The ``nlk`` configuration file as the controller reads it: by content, never by modification time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.nginx.controller import read_nlk_file
from tasks.nginx.settings import ConfigError


def test_an_edit_of_the_same_size_and_mtime_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("nginx-hosts:\n  - http://a.example:8080\n")
    stat = path.stat()
    assert read_nlk_file(str(path))["nginx-hosts"] == ["http://a.example:8080"]
    path.write_text("nginx-hosts:\n  - http://b.example:8080\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # an edit within the mtime granularity
    assert read_nlk_file(str(path))["nginx-hosts"] == ["http://b.example:8080"]


def test_a_missing_or_unparsable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        read_nlk_file(str(tmp_path / "absent.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="cannot read"):
        read_nlk_file(str(bad))
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(ConfigError):
        read_nlk_file(str(listed))
