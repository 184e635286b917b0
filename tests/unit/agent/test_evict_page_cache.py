"""cpuinfer-evict-page-cache: the file's pages are advised out; a file that cannot be opened does not fail a start."""

import os

from cpuinfer_agent import evict_page_cache


def test_the_whole_file_is_advised_out(tmp_path, monkeypatch):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"x" * 8192)
    advised = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, offset, length, advice: advised.append((offset, length, advice)))
    assert evict_page_cache.main([str(model)]) == 0
    assert advised == [(0, 0, os.POSIX_FADV_DONTNEED)]


def test_a_missing_file_is_reported_not_fatal(tmp_path, capsys):
    assert evict_page_cache.main([str(tmp_path / "gone.gguf")]) == 0
    assert "not evicted" in capsys.readouterr().err
    assert evict_page_cache.main([]) == 2
