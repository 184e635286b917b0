import json

import pytest

from cpuinfer_lab import topology, vm


def test_default_topology_has_a_canary_and_both_architectures():
    topo = topology.load(topology.DEFAULT)
    specs = topo.specs()
    assert {s.arch for s in specs} == {"amd64", "arm64"}
    assert sum("canary" in topo.groups_of(s.name) for s in specs) == 1


def test_molecule_platform_keys_are_dropped_from_specs():
    topo = topology.Topology(vms=[{"name": "m", "arch": "arm64", "groups": ["x"], "image": "ignored"}])
    assert topo.specs() == [vm.VmSpec(name="m", arch="arm64")]


def test_unknown_keys_in_a_topology_file_are_refused(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"vms": [{"name": "x", "cpu": 2}]}))
    with pytest.raises(ValueError, match="unknown VM keys"):
        topology.load(path)


def test_inventory_puts_running_vms_in_their_groups():
    topo = topology.Topology(vms=[{"name": "a", "groups": ["xeon", "canary"]}, {"name": "b", "groups": ["xeon"]}])
    rec = vm.VmRecord("a", "amd64", 1, 512, "max", "tcg", 2201, {"8080": 18080}, "/key", "/s", "/i")
    inv = topo.inventory([rec])
    lab = inv["all"]["children"]["lab"]
    assert lab["hosts"]["a"]["ansible_port"] == 2201
    assert lab["hosts"]["a"]["ansible_host"] == "127.0.0.1"
    assert lab["hosts"]["a"]["lab_forwarded_ports"] == {"8080": 18080}
    assert set(lab["children"]) == {"xeon", "canary"}
    assert "b" not in lab["hosts"]


def test_inventory_leaves_out_vms_of_other_topologies():
    topo = topology.Topology(vms=[{"name": "a", "groups": ["xeon"]}])
    mine = vm.VmRecord("a", "amd64", 1, 512, "max", "tcg", 2201, {}, "/key", "/s", "/i")
    theirs = vm.VmRecord("mol-x", "amd64", 1, 512, "max", "tcg", 2202, {}, "/key", "/s", "/i")
    assert set(topo.inventory([mine, theirs])["all"]["children"]["lab"]["hosts"]) == {"a"}
