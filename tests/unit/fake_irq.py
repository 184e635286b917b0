"""A fake /proc/irq whose kernel refuses to move some IRQs, for unit tests."""

import errno

from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs

from kernel_tree import write_tree


class FakeIrqKernel:
    """IRQ 0 is a timer the kernel will not move; refuse maps other paths to an errno."""

    def __init__(self, root, monkeypatch):
        write_tree(root, {
            "/sys/devices/system/cpu/online": "0-3\n",
            "/proc/irq/default_smp_affinity": "f\n",
            "/proc/irq/0/smp_affinity_list": "0-3\n",
            "/proc/irq/24/smp_affinity_list": "0-3\n",
            "/proc/irq/25/smp_affinity_list": "2\n",
            "/proc/irq/26/smp_affinity_list": "0\n",
        })
        self.refuse = {"proc/irq/0/smp_affinity_list": errno.EIO}
        self.writes = []
        self.real_write = _knobs.write_knob
        monkeypatch.setattr(_knobs, "write_knob", self.write)

    def write(self, root, relative, value):
        self.writes.append(relative)
        code = self.refuse.get(relative.lstrip("/"))
        if code:
            raise _knobs.KnobError("cannot write %s: refused" % relative, code)
        self.real_write(root, relative, value)
