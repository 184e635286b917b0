"""What the lab tells a scenario's tests about its VMs: the controller's 127.0.0.1 ports forwarded to
each VM's guest ports, from the lab's own record of the VM (cpuinfer_lab.vm.load_record)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lab"))

from cpuinfer_lab.vm import load_record  # noqa: E402  pylint: disable=wrong-import-position


def forwarded_ports(vm_name):
    """{guest port as text: controller port} of the lab VM vm_name."""
    record = load_record(vm_name)
    if record is None:
        raise LookupError("the lab has no record of VM %s (is it up?)" % vm_name)
    return record.forwarded


def forwarded_port(vm_name, guest_port):
    """The controller's 127.0.0.1 port that the lab forwards to guest_port of vm_name."""
    return forwarded_ports(vm_name)[str(guest_port)]


def host_port(host, guest_port):
    """forwarded_port of the VM behind a testinfra host."""
    return forwarded_port(host.check_output("hostname"), guest_port)
