"""The lab inventory as the front door's play reads it: every backend host's frontdoor_server_address, looked up
through hostvars from the front door host (where a group variable once found `hostvars` undefined, fell back to
127.0.0.1 and pointed every server of the lab's front door at its own instance)."""

import sys

import yaml

from local_playbook import REPO, run_playbook

sys.path.insert(0, str(REPO / "lab"))
from cpuinfer_lab import topology, vm  # noqa: E402  (the lab's package is not installed)

PLAY = """
- hosts: frontdoor
  gather_facts: false
  tasks:
    - name: Each host's address as the front door reaches it
      ansible.builtin.assert:
        that: hostvars[item.key].frontdoor_server_address == item.value
        fail_msg: "{{ item.key }}: {{ hostvars[item.key].frontdoor_server_address }} instead of {{ item.value }}"
      loop: "{{ expected | dict2items }}"
"""


def _record(name, arch, port, peers=None):
    return vm.VmRecord(name, arch, 2, 1024, "max", "tcg", port, {"8081": port + 1}, "/key", "/serial", "/image",
                       peer_addresses=peers or {})


def test_the_front_door_reaches_its_own_instance_on_loopback_and_the_other_host_at_its_peer_address(tmp_path):
    lab = topology.load(topology.DEFAULT)
    door = next(s.name for s in lab.specs() if "frontdoor" in lab.groups_of(s.name))
    others = [s for s in lab.specs() if s.name != door]
    records = [_record(door, "arm64", 2200, {s.name: "10.0.2.%d" % (100 + i) for i, s in enumerate(others)})]
    records += [_record(s.name, s.arch, 2300 + 10 * i) for i, s in enumerate(others)]
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text(yaml.safe_dump(lab.inventory(records)), encoding="utf-8")
    (inventory / "group_vars").symlink_to(REPO / "inventories" / "lab" / "group_vars")
    book = tmp_path / "play.yml"
    book.write_text(PLAY, encoding="utf-8")
    expected = dict({door: "127.0.0.1"}, **{s.name: "10.0.2.%d" % (100 + i) for i, s in enumerate(others)})
    result = run_playbook(book, "-e", yaml.safe_dump({"expected": expected}, default_flow_style=True).strip(),
                          inventory=inventory)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "ok: [%s] => (item=" % door in result.stdout
