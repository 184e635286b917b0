"""A lab topology: which VMs to boot and which inventory groups they join."""

import json
from dataclasses import dataclass
from pathlib import Path

from .vm import LOOPBACK, VmRecord, VmSpec

DEFAULT = Path(__file__).resolve().parent.parent / "topology.json"
SPEC_KEYS = ("name", "arch", "cpus", "memory_mb", "cpu_model", "accel", "forwards", "pin", "numa_nodes", "peers", "boot", "controller_ports")


@dataclass
class Topology:
    vms: list[dict]

    def specs(self) -> list[VmSpec]:
        """VM specs; keys that are not VM settings (groups, molecule's own) are left out."""
        return [VmSpec(**{k: v for k, v in entry.items() if k in SPEC_KEYS}) for entry in self.vms]

    def groups_of(self, name: str) -> list[str]:
        for entry in self.vms:
            if entry["name"] == name:
                return list(entry.get("groups", []))
        return []

    def inventory(self, records: list[VmRecord]) -> dict:
        """Ansible YAML/JSON inventory: the topology's running VMs under `lab`, plus their groups.

        Other VMs (a molecule scenario's, a benchmark's) are left out: a playbook run on this
        inventory must never reach them."""
        children: dict[str, dict] = {}
        hosts = {}
        named = {entry["name"] for entry in self.vms}
        mine = [r for r in records if r.name in named]
        for record in mine:
            hosts[record.name] = dict(record.inventory_vars(), lab_reached_at=reached_at(record.name, mine))
            for group in self.groups_of(record.name):
                children.setdefault(group, {"hosts": {}})["hosts"][record.name] = {}
        return {"all": {"children": {"lab": {"hosts": hosts, "children": children}}}}


def reached_at(name: str, records: list[VmRecord]) -> dict[str, str]:
    """{VM: the address at which that VM reaches this one}: itself on loopback, every VM that has it as a peer
    at the peer address it was given. A concrete value per host: a group variable that looked another host's
    peer addresses up through hostvars found `hostvars` undefined when the front door's play read it (Ansible
    2.19), fell back to its default, and sent every request to the front door's own instance."""
    addresses = {name: LOOPBACK}
    addresses.update({r.name: r.peer_addresses[name] for r in records if name in r.peer_addresses})
    return addresses


def load(path: str | Path) -> Topology:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    unknown = [k for entry in data["vms"] for k in entry if k not in SPEC_KEYS + ("groups",)]
    if unknown:
        raise ValueError(f"{path}: unknown VM keys {sorted(set(unknown))}")
    return Topology(vms=data["vms"])
