# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_tuning's record of the host before the first converge, and its drift report, built from what the
modules read (thp, perf_paranoid, sysctl, irq_affinity in check mode): no kernel file is parsed here.

The code of the tuning filters (plugins/filter/tuning.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_isolation import isolation_cmdline
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import SysctlError, sysctl_key, sysctl_path
from ansible_collections.cpuinfer.llm.plugins.module_utils._thp import THP_DIR, SELECTION_KNOBS

RECORD_FORMAT = 2
PERF_KEY = "kernel.perf_event_paranoid"


def _result(value, name, fields):
    if not isinstance(value, Mapping) or not all(field in value for field in fields):
        raise AnsibleFilterError("tuning: %s must be a module result with %s" % (name, ", ".join(fields)))
    return value


def tuning_record(thp, sysctl):
    """The record to keep, {format, thp, sysctls}, from the check-mode results of thp and sysctl."""
    thp, sysctl = _result(thp, "thp", ("before",)), _result(sysctl, "sysctl", ("before",))
    return dict(format=RECORD_FORMAT, thp=dict((k, thp["before"][k]) for k in SELECTION_KNOBS if k in thp["before"]),
                sysctls=dict(sysctl["before"]))


def tuning_record_kept(record):
    """A kept record in the shape tuning_record makes; one of the first format (kernel path -> value
    as read, perf_event_paranoid among them) is converted."""
    if not isinstance(record, Mapping):
        raise AnsibleFilterError("tuning_record_kept: a record is a dict, not %r" % (record,))
    if record.get("format") == RECORD_FORMAT:
        return dict(format=RECORD_FORMAT, thp=dict(record.get("thp") or {}), sysctls=dict(record.get("sysctls") or {}))
    converted = dict(format=RECORD_FORMAT, thp={}, sysctls={})
    for path, value in record.items():
        knob = path[len(THP_DIR) + 1:] if path.startswith(THP_DIR + "/") else None
        if knob in SELECTION_KNOBS:
            converted["thp"][knob] = value
        elif path.startswith("/proc/sys/"):
            try:
                key = sysctl_key(path)
            except SysctlError as exc:
                raise AnsibleFilterError("tuning_record_kept: %s" % exc)
            if key != PERF_KEY:  # perf_paranoid keeps its own record
                converted["sysctls"][key] = value
    return converted


def _row(setting, wanted, actual):
    return dict(setting=setting, wanted=wanted, actual=actual, in_sync=wanted == actual)


def slice_cpus_shown(text):
    """{unit: AllowedCPUs} from `systemctl show --property=Id --property=AllowedCPUs UNIT...`: one block of
    KEY=VALUE lines per unit, blocks apart by an empty line, in systemd's own property order."""
    slices = {}
    for block in text.strip().split("\n\n"):
        fields = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if "Id" not in fields:
            raise AnsibleFilterError("tuning_settings: no Id= in a block of systemctl show: %r" % block)
        slices[fields["Id"]] = fields.get("AllowedCPUs", "").strip()
    return slices


def tuning_settings(thp, perf, sysctl, slices_now, plan, inference_slice, irq=None, isolation=None, tuned=None):
    """One row {setting, wanted, actual, in_sync} per tuned setting, sorted by setting.

    thp, perf, sysctl: check-mode results of the modules with the role's values (thp and sysctl:
    before = actual, after = wanted; perf_paranoid: previous, level); slices_now: {slice: AllowedCPUs as systemd shows it}, or the text of
    `systemctl show --property=Id --property=AllowedCPUs SLICE...` (one command for every slice); plan: the cpu_plan the
    converge makes (system.slice and user.slice get its housekeeping CPUs when it splits, the inference
    slice its inference CPUs); irq: the irq_affinity check-mode result where IRQs are kept on the
    housekeeping CPUs, else None; isolation: {wanted: nohz_full CPU list the role asks for ('' for none),
    running: ansible_facts.cpuinfer.isolation.nohz_full}, or None; tuned: {active_profile, verify_rc (of
    tuned-adm verify)} where tuned runs, else None."""
    thp = _result(thp, "thp", ("before", "after"))
    perf = _result(perf, "perf_paranoid", ("previous", "level"))
    sysctl = _result(sysctl, "sysctl", ("before", "after"))
    plan = _result(plan, "plan", ("split", "housekeeping", "inference"))
    if isinstance(slices_now, str):
        slices_now = slice_cpus_shown(slices_now)
    if not isinstance(slices_now, Mapping):
        raise AnsibleFilterError("tuning_settings: slices_now must be {slice: AllowedCPUs} or systemctl show's text")
    rows = [_row("%s/%s" % (THP_DIR, knob), thp["after"][knob], thp["before"].get(knob, "missing"))
            for knob in SELECTION_KNOBS if knob in thp["after"]]
    rows.append(_row(sysctl_path(PERF_KEY), str(perf["level"]), str(perf["previous"])))
    rows.extend(_row(sysctl_path(key), sysctl["after"][key], sysctl["before"][key]) for key in sysctl["before"])
    housekeeping = plan["housekeeping"] if plan["split"] else ""
    wanted_cpus = {"system.slice": housekeeping, "user.slice": housekeeping, inference_slice: plan["inference"]}
    rows.extend(_row(name + " AllowedCPUs", wanted_cpus.get(name, "?"), actual) for name, actual in slices_now.items())
    if irq is not None and "moved" in irq:
        actual = plan["housekeeping"] if not irq.get("changed") else "elsewhere: IRQs %s, default %s" % (
            ",".join(str(n) for n in irq["moved"]), (irq.get("before") or {}).get("default", "?"))
        rows.append(_row("IRQ affinity", plan["housekeeping"], actual))
    if isolation is not None:
        isolation = _result(isolation, "isolation", ("wanted", "running"))
        running = isolation["running"]
        if running is None and isolation["wanted"]:
            running = "unsupported: kernel without NO_HZ_FULL"
        if running is not None:
            rows.append(_row("/sys/devices/system/cpu/nohz_full", isolation["wanted"], running))
    if tuned is not None:
        tuned = _result(tuned, "tuned", ("active_profile", "verify_rc"))
        rows.append(_row("tuned active profile", "cpuinfer", tuned["active_profile"]))
        rows.append(_row("tuned-adm verify", "passed", "passed" if tuned["verify_rc"] == 0 else
                         "failed (exit %s; tuned's log names the settings)" % tuned["verify_rc"]))
    return sorted(rows, key=lambda row: row["setting"])


def _ran(result):
    """A registered result, or None where its task was skipped (no reading to compare)."""
    return None if result is None or (isinstance(result, Mapping) and result.get("skipped")) else result


def tuning_settings_of(readings):
    """tuning_settings from verify's readings by name: the check-mode results thp, perf, sysctl and irq (skipped:
    none), slices_now, plan, inference_slice, isolation {mode, isolcpus_flags, running} (the nohz_full the role
    asks for is derived from the plan as the converge derives it) and tuned {active_profile, verify: tuned-adm
    verify's result} (skipped: none)."""
    if not isinstance(readings, Mapping):
        raise AnsibleFilterError("tuning_settings: readings are a dict by name, not %r" % (readings,))
    missing = [name for name in ("thp", "perf", "sysctl", "slices_now", "plan", "inference_slice") if name not in readings]
    if missing:
        raise AnsibleFilterError("tuning_settings: readings lack %s" % ", ".join(missing))
    isolation = readings.get("isolation")
    if isolation is not None:
        isolation = _result(isolation, "isolation", ("mode", "running"))
        wanted = isolation_cmdline(readings["plan"], isolation["mode"], isolation.get("isolcpus_flags"))
        isolation = {"wanted": wanted.get("nohz_full", ""), "running": isolation["running"]}
    tuned = readings.get("tuned")
    verify = _ran(tuned.get("verify")) if isinstance(tuned, Mapping) else None
    tuned = None if verify is None else {"active_profile": tuned.get("active_profile"), "verify_rc": verify.get("rc")}
    return tuning_settings(readings["thp"], readings["perf"], readings["sysctl"], readings["slices_now"], readings["plan"],
                           readings["inference_slice"], _ran(readings.get("irq")), isolation, tuned)
