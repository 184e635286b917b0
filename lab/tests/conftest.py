import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@pytest.fixture
def lab_state(tmp_path, monkeypatch):
    monkeypatch.setenv("CPUINFER_LAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("CPUINFER_LAB_CACHE", str(tmp_path / "cache"))
    return tmp_path
