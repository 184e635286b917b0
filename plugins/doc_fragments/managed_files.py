# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """The directories and files that managed_files writes, and release writes before recording them."""

    DOCUMENTATION = r"""
options:
  directories:
    description: Directories to create or correct.
    type: list
    elements: dict
    default: []
    suboptions:
      path: &path
        description: Absolute path.
        type: str
        required: true
      mode:
        description:
          - Permission bits as quoted octal text, such as V(0755). An unquoted YAML mode is refused, since
            YAML makes C(0644) the number 420 and C(644) the number 644, and which was meant cannot be known.
        type: raw
        default: "0755"
      owner: &owner
        description: Owner's user name.
        type: str
        default: root
      group: &group
        description: Group name.
        type: str
        default: root
  files:
    description:
      - Files to write, each with exactly one of O(files[].content) and O(files[].secret_content).
    type: list
    elements: dict
    default: []
    suboptions:
      path: *path
      content:
        description: The whole text of the file.
        type: str
      secret_content:
        description:
          - The whole text of a file that holds a secret (an environment file with a key, a key).
          - Ansible keeps it out of the logged invocation, the result and the host's journal, so the
            task needs no C(no_log), which would hide the other files' diffs too. The diff shows its
            size only.
        type: str
      mode:
        description:
          - Permission bits as quoted octal text, such as V(0644). An unquoted YAML mode is refused, since
            YAML makes C(0644) the number 420 and C(644) the number 644, and which was meant cannot be known.
        type: raw
        default: "0644"
      owner: *owner
      group: *group
"""

    # managed_files and kernel_settings remove as well (release writes a release, it removes nothing)
    ABSENT = r"""
options:
  absent:
    description:
      - Absolute paths to remove in the same run - a file, a symbolic link (not what it points to), or a
        directory with everything in it. A path that does not exist is already as wanted.
      - A path is set aside by a rename in its own directory first and deleted only when the whole run
        succeeded, so a failed run puts it back whatever its size. The diff names what is removed, never
        a removed file's text (a role's removals hold its keys).
      - Refused, with nothing removed or written, when a directory or file of the same request is at the
        path or below it, or when a directory on the way is a symbolic link.
    type: list
    elements: str
    default: []
"""

    # managed_files and kernel_settings start what they write, in the same run
    UNITS = r"""
options:
  units:
    description:
      - systemd units to have running once the files are written, in the same module run (a role's units
        started beside their files, one round trip instead of one per unit and a reload).
      - When units are given and the run changes a file or drop-in under C(/etc/systemd/system) (or C(/run), C(/usr/lib),
        C(/lib) C(systemd/system)), systemd is reloaded first. Then each unit that does not run is
        started, in the order given; one that runs is restarted when a path of its O(units[].restart_on_change)
        changed in this run, and otherwise left running.
      - The units' states are read before the first write; where systemctl cannot give them, the run fails
        with nothing written (an unknown state is not taken for a stopped one). When a start, restart or
        enable fails, the run stops what it started, disables what it enabled, puts the files back, reloads
        systemd again and restarts once more what it restarted, then fails saying so.
      - Refused with a O(root) other than C(/), since systemd runs this host's units, not a tree's.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The unit, with its type (C(example.service), C(example.slice), C(example.timer), ...).
        type: str
        required: true
      enabled:
        description:
          - V(true) enables the unit (nothing to do for one without an C([Install]) section); V(false) disables
            it; not given leaves it as it is.
        type: bool
      restart_on_change:
        description:
          - Paths of this run (its directories, files or absent paths) whose change restarts the unit where it
            runs already, such as its unit file, drop-in and configuration.
        type: list
        elements: str
        default: []
"""
