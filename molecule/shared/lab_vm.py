"""What the lab tells a scenario's tests about its VMs: the controller's 127.0.0.1 ports forwarded to
each VM's guest ports (scripts/lab writes them to the VM's vm.json)."""

import json
import os


def forwarded_ports(vm_name):
    """{guest port as text: controller port} of the lab VM vm_name."""
    state = os.environ.get("CPUINFER_LAB_STATE", "/var/lib/cpuinfer-lab")
    with open(os.path.join(state, "vms", vm_name, "vm.json"), encoding="utf-8") as handle:
        return json.load(handle)["forwarded"]


def forwarded_port(vm_name, guest_port):
    """The controller's 127.0.0.1 port that the lab forwards to guest_port of vm_name."""
    return forwarded_ports(vm_name)[str(guest_port)]


def host_port(host, guest_port):
    """forwarded_port of the VM behind a testinfra host."""
    return forwarded_port(host.check_output("hostname"), guest_port)
