"""The main job's demonstration table, from the isolation runner's raw samples."""

import importlib.util
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "demo" / "table.py"


def sample(variant, round_, rate, gaps):
    return {"variant": variant, "round": round_, "tokens_per_second": rate, "first_token_ms": 50.0, "gaps_ms": gaps}


def test_the_table_shows_each_variant_and_its_ratio_to_the_service_alone():
    spec = importlib.util.spec_from_file_location("demo_table", TABLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    samples = []
    for round_ in range(2):
        samples += [sample("a_untuned", round_, 10.0, [100.0] * 5), sample("b_untuned_neighbour", round_, 2.5, [400.0] * 5),
                    sample("a_tuned", round_, 8.0, [120.0] * 5), sample("c_tuned_neighbour", round_, 7.6, [126.0] * 5)]
    text = module.table({"samples": samples, "units": {"system.slice": {"AllowedCPUs": "0"}}})
    lines = text.splitlines()
    assert lines[2].split()[:2] == ["untuned", "+"] and "0.25x, 4.00x" in lines[2]
    assert "0.95x, 1.05x" in lines[4]
    assert "AllowedCPUs=0" in lines[-1] and "2 rounds" in lines[-1]
