#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kernel_cmdline
short_description: Kernel command line arguments through the boot loader of the host's OS family
version_added: 1.0.0
description:
  - Sets (or removes) kernel command line arguments for the next boot, through the boot loader tool of
    the host's OS family, and reports whether the running kernel still differs (a reboot is needed).
  - Debian family (Debian, Ubuntu, Kylin and UOS desktop) - a drop-in
    C(/etc/default/grub.d/91-cpuinfer-NAME.cfg) appended to C(GRUB_CMDLINE_LINUX_DEFAULT), then
    C(update-grub). The drop-in is the record of what this module set; O(state=absent) removes it.
  - RPM family (openEuler, Kylin and UOS server, RHEL and its rebuilds) - C(grubby --update-kernel=ALL),
    checked against C(grubby --info=ALL) for every boot entry; O(state=absent) removes the keys of O(args).
  - O(state=absent) on a host without its family's boot loader tool (a VM booted directly by its hypervisor)
    changes nothing and succeeds; O(state=present) there fails, naming the missing tool.
  - Never reboots; the caller decides (see the host_tuning role's C(host_tuning_reboot_ok)).
  - On a failed write the boot loader is put back as it was.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  name:
    description: Names this set of arguments (the Debian drop-in's file name); lowercase letters, digits, C(-).
    type: str
    required: true
  args:
    description:
      - Arguments as C(key -> value); a null value is a flag without C(=).
      - Values are printable ASCII without spaces, quotes, C($), backquote or backslash.
      - With O(state=absent) on the RPM family, only the keys count.
    type: dict
    default: {}
  state:
    description: V(present) sets exactly O(args) under O(name); V(absent) takes them away.
    type: str
    choices: [present, absent]
    default: present
extends_documentation_fragment:
  - cpuinfer.llm.kernel
"""

EXAMPLES = r"""
- name: Keep the scheduler tick and RCU callbacks off the inference CPUs (applies at the next boot)
  cpuinfer.llm.kernel_cmdline:
    name: isolation
    args:
      nohz_full: 2-15
      rcu_nocbs: 2-15
      irqaffinity: 0-1
  register: cmdline

- name: Say when a reboot is pending
  ansible.builtin.debug:
    msg: "reboot needed for {{ cmdline.after }}"
  when: cmdline.reboot_required

- name: Take them away again
  cpuinfer.llm.kernel_cmdline:
    name: isolation
    args: {nohz_full: null, rcu_nocbs: null, irqaffinity: null}
    state: absent
"""

RETURN = r"""
before:
  description: The managed arguments the boot loader had before the run (key -> value, null for a flag).
  returned: always
  type: dict
  sample: {}
after:
  description: The managed arguments the boot loader has after the run (in check mode, would have).
  returned: always
  type: dict
  sample: {nohz_full: 2-15, rcu_nocbs: 2-15, irqaffinity: 0-1}
running:
  description: The managed keys as the running kernel booted with them (from C(/proc/cmdline)).
  returned: always
  type: dict
  sample: {}
reboot_required:
  description: Whether the running kernel differs from RV(after) in the managed keys.
  returned: always
  type: bool
  sample: true
family:
  description: The OS family the boot loader was written for.
  returned: always
  type: str
  sample: debian
boot_loader_tool:
  description: The tool that wrote the boot loader configuration; null where the host has none (O(state=absent) only).
  returned: always
  type: str
  sample: /usr/sbin/update-grub
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _bootloader
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER, read_file, restore_file
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if, run_module

ARGUMENT_SPEC = dict(
    name=dict(type="str", required=True),
    args=dict(type="dict", default={}),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    root=dict(type="path", default="/"),
)


def _run(module, argv):
    """The command's output; a non-zero exit is a HostError naming the command and its stderr."""
    rc, out, err = module.run_command(argv)
    if rc != 0:
        raise HostError("%s failed (exit %d): %s" % (" ".join(argv[:2]), rc, (err or "").strip()[-400:]))
    return out


def _debian(module, journal, tool, wanted, name):
    root, relative = module.params["root"], _bootloader.dropin_relative(name)
    text_before = read_file(root, relative)
    text_after = _bootloader.render_dropin(wanted, MANAGED_HEADER.format(module="cpuinfer.llm.kernel_cmdline"))
    before, after = _bootloader.parse_dropin(text_before), _bootloader.parse_dropin(text_after)

    def write(text, previous):
        """The drop-in and the grub.cfg update-grub makes of it, as one step: a drop-in that grub.cfg
        does not reflect would read as done."""
        restore_file(root, relative, text)
        try:
            _run(module, [tool])
        except HostError:
            restore_file(root, relative, previous)
            raise

    changed = text_after != text_before
    if changed:
        journal.apply([Step("%s %s and run update-grub" % ("remove" if text_after is None else "write", relative),
                            lambda: write(text_after, text_before), lambda: write(text_before, text_after))])
    diff = dict(before_header=relative, after_header=relative, before=text_before or "", after=text_after or "")
    return before, after, diff, changed


def _rpm(module, journal, tool, wanted, removed_keys):
    entries = _bootloader.parse_grubby_info(_run(module, [tool, "--info=ALL"]))
    if not entries:
        raise HostError("grubby --info=ALL lists no boot entry: nothing to write the arguments to")
    keys = set(wanted) | set(removed_keys)
    before = _bootloader.grubby_common_args(entries, keys)
    steps = []
    for kernel, add, remove, previous in _bootloader.grubby_plan(entries, wanted, removed_keys):
        undo_remove = sorted(set(add) | set(remove))
        steps.append(Step(
            "grubby %s: add %s, remove %s" % (kernel, _bootloader.render_args(add) or "nothing", " ".join(remove) or "nothing"),
            lambda kernel=kernel, add=add, remove=remove: _run(module, _bootloader.grubby_argv(tool, kernel, add, remove)),
            lambda kernel=kernel, previous=previous, undo_remove=undo_remove: _run(
                module, _bootloader.grubby_argv(tool, kernel, previous, [k for k in undo_remove if k not in previous]))))
    journal.apply(steps)
    after = dict(wanted)
    changed = bool(steps)
    diff = dict(before_header="grubby (every entry)", after_header="grubby (every entry)",
                before=_bootloader.render_args(before) + "\n", after=_bootloader.render_args(after) + "\n")
    return before, after, diff, changed


def converge(module, journal):
    params, root = module.params, module.params["root"]
    args = dict((str(key), None if value is None else str(value)) for key, value in params["args"].items())
    refuse_if(_bootloader.validate_name(params["name"]) + _bootloader.validate_args(args))
    if params["state"] == "present" and not args:
        raise Refused("nothing to set: give args, or state=absent to remove them")
    family = _bootloader.os_family(root)
    running = _bootloader.running_args(root)
    try:
        tool = _bootloader.boot_loader_tool(root, family)
    except HostError as exc:
        if params["state"] == "present":
            raise Refused(str(exc))
        # a host with no boot loader tool holds none of our arguments: absent is already true there
        # (a VM booted by its hypervisor, a container); what it booted with is still reported
        return dict(changed=False, before={}, after={}, family=family, boot_loader_tool=None,
                    running=dict((k, running[k]) for k in sorted(args) if k in running),
                    reboot_required=_bootloader.reboot_required(running, {}, set(args)))
    wanted = args if params["state"] == "present" else {}
    removed = set(args) if params["state"] == "absent" else set()
    if family == _bootloader.DEBIAN:
        before, after, diff, changed = _debian(module, journal, tool, wanted, params["name"])
        removed |= set(before) - set(after)
    else:
        before, after, diff, changed = _rpm(module, journal, tool, wanted, removed)
    managed = set(before) | set(after) | removed
    result = dict(
        changed=changed,
        before=before, after=after, family=family, boot_loader_tool=tool,
        running=dict((k, running[k]) for k in sorted(managed) if k in running),
        reboot_required=_bootloader.reboot_required(running, after, managed - set(after)),
    )
    if module._diff:
        result["diff"] = diff
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
