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


def _booted_by_up(monkeypatch, argv):
    from cpuinfer_lab import accel, cli, preflight, vm

    booted = []
    monkeypatch.setattr(preflight, "missing", lambda: [])
    monkeypatch.setattr(accel, "resolve", lambda wanted, arch, log=None: wanted)
    monkeypatch.setattr(vm, "start_many", lambda specs, boot_timeout, log: booted.extend(specs) or [])
    return cli.main(["up", *argv]), [spec.name for spec in booted]


def test_up_only_boots_the_named_vms_of_the_topology_with_their_specs(monkeypatch):
    code, names = _booted_by_up(monkeypatch, ["--only", "lab-kunpeng-1"])
    assert (code, names) == (0, ["lab-kunpeng-1"])
    code, names = _booted_by_up(monkeypatch, [])
    assert (code, names) == (0, ["lab-xeon-1", "lab-kunpeng-1"])


def test_up_only_refuses_a_name_the_topology_lacks_and_boots_nothing(monkeypatch, capsys):
    code, names = _booted_by_up(monkeypatch, ["--only", "lab-kunpeng-1", "--only", "lab-typo"])
    assert (code, names) == (2, [])
    assert "lab-typo" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["ad-hoc-1", "--only", "ad-hoc-1"],
                                  ["--specs", '[{"name": "s-1"}]', "--only", "s-1"]])
def test_up_only_is_refused_beside_names_or_specs_and_boots_nothing(monkeypatch, capsys, argv):
    code, names = _booted_by_up(monkeypatch, argv)
    assert (code, names) == (2, [])
    assert "--only picks VMs of a topology" in capsys.readouterr().err


def test_each_host_says_where_every_vm_reaches_it_itself_on_loopback_a_peer_holder_at_its_peer_address():
    topo = topology.Topology(vms=[{"name": "door"}, {"name": "other"}])
    door = vm.VmRecord("door", "arm64", 2, 512, "max", "tcg", 2201, {}, "/key", "/s", "/i",
                       peer_addresses={"other": "10.0.2.100"})
    other = vm.VmRecord("other", "amd64", 2, 512, "max", "tcg", 2202, {}, "/key", "/s", "/i")
    hosts = topo.inventory([door, other])["all"]["children"]["lab"]["hosts"]
    assert hosts["other"]["lab_reached_at"] == {"other": "127.0.0.1", "door": "10.0.2.100"}
    assert hosts["door"]["lab_reached_at"] == {"door": "127.0.0.1"}
