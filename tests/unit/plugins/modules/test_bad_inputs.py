"""The bad inputs an operator can give each module, and the message each gets.

Every case must fail through fail_json with its expected words, without a traceback, with the fake
host's tree unchanged. docs/bad-inputs.md is this table rendered with the real messages; a test
keeps it current (CPUINFER_WRITE_DOCS=1 rewrites it).
"""

import os
import re
from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.modules import (
    cgroup_v2,
    host_facts,
    irq_affinity,
    kernel_settings,
    managed_files,
    perf_paranoid,
    rdt_cat,
    release,
    sched_policy,
    sysctl,
    thp,
)

from fake_cgroup import DELEGATED
from fake_hosts import cgroup_host, files_host, irq_host, kernel_host, perf_host, rdt_host, sched_host, sysctl_host, thp_host
from kernel_tree import full_snapshot, kunpeng_tree, write_tree, xeon_tree

DOC = Path(__file__).resolve().parents[4] / "docs" / "bad-inputs.md"
GROUP = DELEGATED + "/model-a"
KHUGEPAGED = "/sys/kernel/mm/transparent_hugepage/khugepaged/"
CPU = "/sys/devices/system/cpu/"
THP_DROPIN = "/etc/tmpfiles.d/cpuinfer-thp.conf"
PERF_DROPIN = "/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf"
HAND_EDITED_THP = {THP_DROPIN: "w /sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan - - - - lots\n"}


def linked(relative, target="/tmp"):
    """Host set-up: the directory relative is a symbolic link to target (outside the fake root)."""
    def make(root):
        path = Path(root) / relative.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, str(path))
    make.shown = "`%s` -> %s" % (relative, target)
    return make


THP = [
    ({}, "nothing to set"),
    ({"enabled": "sometimes"}, "value of enabled must be one of"),
    ({"enabled": "１"}, "value of enabled must be one of"),
    ({"defrag": "always madvise"}, "value of defrag must be one of"),
    ({"khugepaged": 0}, "khugepaged must be a dict of"),
    ({"khugepaged": "fast"}, "dictionary requested"),
    ({"khugepaged": {"pages_to_scan": 0}}, "pages_to_scan must be at least 1"),
    ({"khugepaged": {"pages_to_scan": -1}}, "must be in 0..4294967295"),
    ({"khugepaged": {"pages_to_scan": 2 ** 32}}, "must be in 0..4294967295"),
    ({"khugepaged": {"pages_to_scan": "１０"}}, "khugepaged.pages_to_scan '１０': write the number with the digits 0-9 only"),
    ({"khugepaged": {"pages_to_scan": "0x10"}}, "cannot be converted to an int"),
    ({"khugepaged": {"pages_to_scan": True}}, "khugepaged.pages_to_scan must be a number, not true or false"),
    ({"khugepaged": {"max_ptes_none": 512}}, "max_ptes_none must be at most 511"),
    ({"khugepaged": {"max_ptes_none": 100000}}, "max_ptes_none must be at most 511"),
    ({"khugepaged": {"defrag": 2}}, "khugepaged.defrag must be 0 or 1"),
    ({"khugepaged": {"scan_sleep_millisecs": -5}}, "must be in 0..4294967295"),
    ({"khugepaged": {"alloc_sleep_millisecs": 1.5}}, "cannot be converted to an int"),
    ({"khugepaged": {"sleep": 10}}, "Unsupported parameters"),
    ({"enabled": "madvise", "persistent": "perhaps"}, "persistent"),
    ({"enabled": "madvise", "colour": "red"}, "Unsupported parameters"),
    ({"enabled": "madvise"}, "holds 'lots', not a number", {KHUGEPAGED + "pages_to_scan": "lots\n"}),
    ({"enabled": "madvise"}, "no [selected] choice", {"/sys/kernel/mm/transparent_hugepage/enabled": "always\n"}),
    ({"enabled": "madvise"}, "holds '４０９６', not a number", {KHUGEPAGED + "pages_to_scan": "４０９６\n"}),
    ({"enabled": "madvise"}, "holds 'lots' where a number belongs; correct or remove the line", HAND_EDITED_THP),
]
PERF = [
    ({}, "level is required with state=present"),
    ({"level": 5}, "level must be between -1 and 4"),
    ({"level": -2}, "level must be between -1 and 4"),
    ({"level": -1}, "refused without allow_unrestricted=true"),
    ({"level": "２"}, "level '２': write the number with the digits 0-9 only"),
    ({"level": "1_0"}, "level '1_0': write the number with the digits 0-9 only"),
    ({"level": "high"}, "cannot be converted to an int"),
    ({"level": "0x2"}, "cannot be converted to an int"),
    ({"level": True}, "level must be a number, not true or false"),
    ({"level": False}, "level must be a number, not true or false"),
    ({"level": 2.5}, "cannot be converted to an int"),
    ({"level": [2]}, "cannot be converted to an int"),
    ({"level": 2, "state": "absent"}, "level is not used with state=absent"),
    ({"level": 2, "state": "gone"}, "value of state must be one of"),
    ({"level": 2, "allow_unrestricted": "maybe"}, "allow_unrestricted"),
    ({"level": 2, "persistent": "maybe"}, "persistent"),
    ({"level": 2, "colour": "red"}, "Unsupported parameters"),
    ({"level": 10 ** 20}, "level must be between -1 and 4"),
    ({"level": 2}, "holds '３', not an integer", {"/proc/sys/kernel/perf_event_paranoid": "３\n"}),
    ({"level": 2}, "holds '', not an integer", {"/proc/sys/kernel/perf_event_paranoid": "\n"}),
    ({"level": 2}, "holds 'restricted', not an integer", {"/proc/sys/kernel/perf_event_paranoid": "restricted\n"}),
]
CGROUP = [
    ({"path": "/sys/fs/cgroup/x"}, "path must be relative to the cgroup2 mount"),
    ({"path": ""}, "path must be relative to the cgroup2 mount"),
    ({"path": GROUP + "/../x"}, "has an empty, '.' or '..' component"),
    ({"path": "system.slice/other"}, "is not below a unit started with Delegate=yes"),
    ({"path": GROUP, "cpu_weight": 0}, "cpu_weight must be in 1..10000"),
    ({"path": GROUP, "cpu_weight": True}, "cpu_weight must be a number, not true or false"),
    ({"path": GROUP, "cpu_max": "１０００ 100000"}, "cpu_max '１０００ 100000' is malformed"),
    ({"path": GROUP, "cpu_max": "500 100000"}, "quota 500 is below 1000 us"),
    ({"path": GROUP, "cpu_max": "50000 5000000"}, "period 5000000 is outside 1000..1000000 us"),
    ({"path": GROUP, "memory_max": "512"}, "memory_max '512' is 512 bytes, below the 16M"),
    ({"path": GROUP, "memory_high": "0"}, "memory_high '0' is 0 bytes, below the 16M no process can run in (an instant OOM); for no limit write 'max'"),
    ({"path": GROUP, "memory_max": "１G"}, "unknown size '１G'"),
    ({"path": GROUP, "memory_max": "-1G"}, "unknown size '-1G'"),
    ({"path": GROUP, "memory_high": "2G", "memory_max": "1G"}, "memory_high (2G) must not exceed memory_max (1G)"),
    ({"path": GROUP, "io_max": {"8:0": 5}}, "io_max[8:0] must be a dict of rbps, wbps, riops, wiops, not 5"),
    ({"path": GROUP, "io_max": {"8:0": {"riops": -5}}}, "io_max[8:0].riops must be a whole number"),
    ({"path": GROUP, "io_max": {"8:0": {"wbps": 0}}}, "io_max[8:0].wbps is 0"),
    ({"path": GROUP, "io_max": {"8:0": {"rbps": "-5M"}}}, "io_max[8:0].rbps: unknown size '-5M'"),
    ({"path": GROUP, "io_max": {"9:9": {"rbps": "1M"}}}, "'9:9' is not a block device of this host"),
    ({"path": GROUP, "io_weight": {"default": True}}, "io_weight[default] must be an integer in 1..10000, not True"),
    ({"path": GROUP, "io_weight": {"default": "１００"}}, "io_weight[default] must be an integer in 1..10000, not '１００'"),
    ({"path": GROUP, "io_weight": {"default": 0}}, "io_weight[default] must be an integer in 1..10000, not 0"),
    ({"path": GROUP, "cpuset_cpus": "0-7"}, "CPUs 4-7 not online"),
    ({"path": GROUP, "cpuset_cpus": "１"}, "malformed CPU list element '１'"),
    ({"path": GROUP, "cpuset_cpus": "3-1"}, "reversed range '3-1'"),
    ({"path": GROUP, "cpuset_mems": "1"}, "NUMA nodes 1 not online"),
    ({"path": GROUP, "pids_max": "１０"}, "pids_max must be a non-negative integer or 'max'"),
    ({"path": GROUP, "procs": [1]}, "procs: 1 are PID 1 or kernel threads"),
    ({"path": GROUP, "procs": [2]}, "procs: 2 are PID 1 or kernel threads"),
    ({"path": GROUP, "procs": [999999]}, "procs: no process 999999"),
    ({"path": GROUP, "procs": [0]}, "procs: no process 0"),
    ({"path": GROUP, "controllers": ["gpu"]}, "value of controllers must be one or more of"),
    ({"path": GROUP, "memory_max": "1G"}, "this host mounts cgroup v1 at /sys/fs/cgroup",
     {"/proc/mounts": "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"}),
    ({"path": GROUP, "memory_max": "1G", "require_delegation": False}, "v1 beside v2 (hybrid)",
     {"/proc/mounts": "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"}),
]
RDT = [
    ({"name": "info"}, "group name 'info' is not allowed"),
    ({"name": "a/b"}, "group name 'a/b' is not allowed"),
    ({"name": "", "state": "absent"}, "the default group cannot be removed"),
    ({"name": "inference", "schemata": {"L3": 255}}, "255 is a number, not a hex mask; quote the mask"),
    ({"name": "inference", "schemata": {"L3": "xyz"}}, "'xyz' is not a hex mask"),
    ({"name": "inference", "schemata": {"L3": "ｆｆ"}}, "'ｆｆ' is not a hex mask"),
    ({"name": "inference", "schemata": {"L3": ["f"]}}, "not a list"),
    ({"name": "inference", "schemata": {"L3": "1000"}}, "bits outside cbm_mask fff"),
    ({"name": "inference", "schemata": {"L3": "f0f"}}, "is not contiguous"),
    ({"name": "inference", "schemata": {"L3": "0"}}, "fewer than min_cbm_bits=1"),
    ({"name": "inference", "schemata": {"L3": {"7": "f"}}}, "L3 has no domain 7"),
    ({"name": "inference", "schemata": {"L4": "f"}}, "unknown resource 'L4'"),
    ({"name": "inference", "schemata": {"L2": "f"}}, "this host does not offer L2"),
    ({"name": "inference", "schemata": {"MB": "５０"}}, "'５０' is not a whole number"),
    ({"name": "inference", "schemata": {"MB": True}}, "True is not a whole number"),
    ({"name": "inference", "schemata": {"MB": 55}}, "not a multiple of bandwidth_gran 10"),
    ({"name": "inference", "schemata": {"MB": 5}}, "outside 10..100"),
    ({"name": "inference", "cpus": "0-63"}, "cpus 8-63 are not online"),
    ({"name": "inference", "cpus": "x"}, "malformed CPU list element 'x'"),
    ({"name": "inference", "monitor": ["decode"]}, "unable to convert to dict"),
    ({"name": "inference", "monitor": 5}, "unable to convert to dict"),
    ({"name": "inference", "monitor": {"decode": "4242"}}, "monitor[decode] must be a list of process ids"),
    ({"name": "inference", "monitor": {"": [4242]}}, "monitor group name '' is not allowed"),
    ({"name": "inference", "unit": ""}, "unit must not be empty"),
    ({"name": "inference", "unit": "gone.service"}, "unit gone.service is not running"),
    ({"name": "inference", "pids": [0]}, "no process 0"),
    ({"name": "inference", "mount": True}, "mount must be a dict of cdp, cdpl2, mba_MBps"),
]
IRQ = [
    ({}, "missing required arguments: cpus"),
    ({"cpus": ""}, "cpus is empty"),
    ({"cpus": "0-9"}, "cpus 4-9 are not online"),
    ({"cpus": "１"}, "malformed CPU list element '１'"),
    ({"cpus": "²"}, "malformed CPU list element '²'"),
    ({"cpus": "3-1"}, "reversed range '3-1'"),
    ({"cpus": "0-"}, "malformed CPU list element '0-'"),
    ({"cpus": "-1"}, "malformed CPU list element '-1'"),
    ({"cpus": "a,b"}, "malformed CPU list element 'a'"),
    ({"cpus": "0,,1"}, "malformed CPU list element ''"),
    ({"cpus": "0-1-2"}, "malformed CPU list element '0-1-2'"),
    ({"cpus": "0x1"}, "malformed CPU list element '0x1'"),
    ({"cpus": "0 1"}, "malformed CPU list element '0 1'"),
    ({"cpus": "99999999999999999999"}, "not online"),
    ({"cpus": "0", "match": "near"}, "value of match must be one of"),
    ({"cpus": "0", "default": "perhaps"}, "default"),
    ({"cpus": "0", "colour": "red"}, "Unsupported parameters"),
    ({"cpus": ["0"]}, "malformed CPU list element"),
    ({"cpus": "0"}, "malformed CPU list element 'x'", {CPU + "online": "x\n"}),
    ({"cpus": "0"}, "malformed CPU list element '２'", {"/proc/irq/24/smp_affinity_list": "２\n"}),
    ({"cpus": "0"}, "/proc/irq/default_smp_affinity holds 'zz', not a hex CPU mask", {"/proc/irq/default_smp_affinity": "zz\n"}),
    ({"cpus": "0"}, "holds '０f', not a hex CPU mask", {"/proc/irq/default_smp_affinity": "０f\n"}),
]
SCHED = [
    ({"pid": 100}, "policy is required with state=present"),
    ({"policy": "idle"}, "give exactly one of pid, pids, unit, process_name (got none)"),
    ({"pid": 100, "unit": "llama.service", "policy": "idle"}, "give exactly one of"),
    ({"unit": "", "policy": "idle"}, "unit must not be empty"),
    ({"process_name": "", "policy": "idle"}, "process_name must not be empty"),
    ({"process_name": " ", "policy": "idle"}, "process_name must not be empty"),
    ({"pid": 1, "policy": "idle"}, "processes 1 are PID 1 or kernel threads"),
    ({"pid": 2, "policy": "idle"}, "processes 2 are PID 1 or kernel threads"),
    ({"pid": 0, "policy": "idle"}, "no process 0"),
    ({"pid": -1, "policy": "idle"}, "no process -1"),
    ({"pid": 999, "policy": "idle"}, "no process 999"),
    ({"pid": "１００", "policy": "idle"}, "pid '１００': write the number with the digits 0-9 only"),
    ({"pid": 100, "policy": "fifo"}, "policy fifo needs priority 1..99"),
    ({"pid": 100, "policy": "fifo", "priority": 100}, "policy fifo needs priority 1..99"),
    ({"pid": 100, "policy": "fifo", "priority": True}, "priority must be a number, not true or false"),
    ({"pid": 100, "policy": "other", "priority": 5}, "priority is only for fifo and rr"),
    ({"pid": 100, "policy": "batch", "nice": 20}, "nice (-20..19) applies to other and batch only"),
    ({"pid": 100, "policy": "deadline", "runtime": "１ms", "deadline": "10ms"}, "'１ms' is not a duration"),
    ({"pid": 100, "policy": "deadline", "runtime": "20ms", "deadline": "10ms"}, "runtime (20000000) <= deadline"),
    ({"pid": 100, "policy": "deadline", "runtime": "100ns", "deadline": "10ms"}, "1024 ns <= runtime"),
    ({"pid": 100, "policy": "idle", "runtime": "2ms"}, "only for policy deadline"),
    ({"pid": 100, "policy": "realtime"}, "value of policy must be one of"),
    ({"pid": 100, "policy": "idle"}, "root is ROOT, not /: this module changes real threads through system calls"),
    ({"pid": 100, "policy": "fifo", "priority": 5}, "real-time throttling is off",
     {"/proc/sys/kernel/sched_rt_runtime_us": "-1\n"}),
]


SYSCTL = [
    ({}, "missing required arguments: values"),
    ({"values": None}, "cannot be converted to a dict"),
    ({"values": "kernel.numa_balancing=0 x"}, "unable to convert to dict"),
    ({"values": [1]}, "type list"),
    ({"values": {"kernel/numa_balancing": 0}}, "not a sysctl key"),
    ({"values": {"numa_balancing": 0}}, "not a sysctl key"),
    ({"values": {"Kernel.Numa_Balancing": 0}}, "not a sysctl key"),
    ({"values": {"kernel..numa": 0}}, "not a sysctl key"),
    ({"values": {"kernel.numa_balancing": True}}, "not True"),
    ({"values": {"kernel.numa_balancing": None}}, "not None"),
    ({"values": {"kernel.numa_balancing": [0]}}, "not [0]"),
    ({"values": {"kernel.numa_balancing": {"v": 0}}}, "not {'v': 0}"),
    ({"values": {"kernel.numa_balancing": ""}}, "not a one-line value"),
    ({"values": {"kernel.numa_balancing": "  "}}, "not a one-line value"),
    ({"values": {"kernel.numa_balancing": "0\nkernel.x = 1"}}, "not a one-line value"),
    ({"values": {"kernel.perf_event_paranoid": 2}}, "set by cpuinfer.llm.perf_paranoid"),
    ({"values": {"kernel.no_such_knob": 1}, "missing": "fail"}, "this kernel has no kernel.no_such_knob"),
    ({"values": {"kernel.numa_balancing": 0}, "missing": "ignore"}, "value of missing must be one of"),
    ({"values": {"kernel.numa_balancing": 0}, "colour": "red"}, "Unsupported parameters"),
    ({"values": {"kernel.numa_balancing": 0, "bad key": 1, "kernel.x": False}}, "not a sysctl key: 'bad key'"),
    ({"values": {"kernel.numa_balancing": "０"}}, "kernel.numa_balancing: '０' has characters procfs does not take"),
    ({"values": {"kernel.numa_balancing": "1 ☃"}}, "has characters procfs does not take (printable ASCII only)"),
    ({"values": {"kernel.numa_balancing": "1\x00"}}, "has characters procfs does not take"),
    ({"values": {"kernel.numa_balancing\n": 0}}, "not a sysctl key: 'kernel.numa_balancing\\n'"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": THP_DROPIN}, "is cpuinfer.llm.thp's drop-in"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d//90-cpuinfer-perf-paranoid.conf"},
     "dropin /etc/sysctl.d/90-cpuinfer-perf-paranoid.conf is cpuinfer.llm.perf_paranoid's drop-in"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": ""}, "dropin: '' is not an absolute path"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/"}, "dropin: '/' is not an absolute path"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/x\x00.conf"}, "without '..' or NUL bytes"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/../passwd"}, "without '..' or NUL bytes"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/90-x/"},
     "dropin: /etc/sysctl.d/90-x/ ends in '/', a directory; systemd-sysctl reads only *.conf files in /etc/sysctl.d"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/90-x.cfg"}, "/etc/sysctl.d/90-x.cfg is not named *.conf"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/.90-x.conf"}, "/etc/sysctl.d/.90-x.conf is not named *.conf"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.conf"},
     "/etc/sysctl.conf is not directly in one of its directories; systemd-sysctl reads only"),
    ({"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/local/90-x.conf"}, "is not directly in one of its directories"),
    ({"values": {"kernel.numa_balancing": 0}}, "dropin: /etc/sysctl.d/90-cpuinfer-tuning.conf leads through /etc/sysctl.d",
     linked("/etc/sysctl.d")),
]
KERNEL = [
    ({}, "nothing to set: give thp, perf_paranoid, sysctl, directories, files, absent or units"),
    ({"thp": {}}, "thp: nothing to set: give enabled, defrag or khugepaged"),
    ({"thp": 5}, "thp must be a dict of"),
    ({"thp": {"khugepaged": 5}}, "thp.khugepaged must be a dict of alloc_sleep_millisecs, defrag, max_ptes_none, pages_to_scan, "
     "scan_sleep_millisecs, not 5"),
    ({"thp": {"khugepaged": [1]}}, "thp.khugepaged must be a dict of alloc_sleep_millisecs"),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/x/"}},
     "sysctl: invalid request, nothing written: dropin: /etc/sysctl.d/x/ ends in '/', a directory"),
    ({"thp": {"enabled": "sometimes"}}, "value of enabled must be one of"),
    ({"thp": {"enabled": "madvise"}}, "thp: %s: the line" % THP_DROPIN, HAND_EDITED_THP),
    ({"perf_paranoid": {"level": -1}}, "perf_paranoid: level -1 opens every perf event"),
    ({"perf_paranoid": {"level": 9}}, "perf_paranoid: level must be between -1 and 4, not 9"),
    ({"perf_paranoid": {"level": True}}, "perf_paranoid.level must be a number, not true or false"),
    ({"sysctl": {"values": {"kernel.numa_balancing": "０"}}}, "sysctl: invalid request, nothing written: kernel.numa_balancing: '０'"),
    ({"sysctl": {"values": {"kernel.perf_event_paranoid": 2}}}, "is set by cpuinfer.llm.perf_paranoid"),
    ({"sysctl": {"values": {"kernel.numa_balancing": "0\n1"}}}, "is not a one-line value"),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}, "dropin": THP_DROPIN}}, "sysctl.dropin %s is thp's own drop-in" % THP_DROPIN),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/tmpfiles.d//cpuinfer-thp.conf"}},
     "sysctl.dropin %s is thp's own drop-in" % THP_DROPIN),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}, "dropin": ""}}, "sysctl: invalid request, nothing written: dropin: ''"),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}, "missing": "ignore"}}, "value of missing must be one of"),
    ({"thp": {"enabled": "madvise"}, "files": [{"path": "/etc/tmpfiles.d/./cpuinfer-thp.conf", "content": "x"}]},
     "/etc/tmpfiles.d/./cpuinfer-thp.conf: thp writes this drop-in"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": 420}]}, "mode 420 is a number, not octal text"),
    ({"files": [{"path": "/etc/x\x00", "content": ""}]}, "without '..' or NUL bytes"),
    ({"files": [{"path": "/etc//x", "content": ""}, {"path": "/etc/./x", "content": "2"}]}, "/etc/x is listed twice"),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}}, "files": [{"path": "/etc/linked.d/x.conf", "content": "x"}]},
     "files path: /etc/linked.d/x.conf leads through /etc/linked.d", linked("/etc/linked.d")),
    ({"colour": "red"}, "Unsupported parameters"),
]
RECORD = "/var/lib/cpuinfer/releases/demo.json"
ONE_RELEASE = '{"version": 1, "current": {}, "previous": null}'
RELEASE_ARGS = {"name": "demo", "patterns": ["/etc/systemd/system/demo-*.service"]}
RELEASE = [
    (dict(RELEASE_ARGS, name="../x"), "letters, digits"),
    (dict(RELEASE_ARGS, name=""), "letters, digits"),
    (dict(RELEASE_ARGS, name="a b"), "letters, digits"),
    (dict(RELEASE_ARGS, name="a/b"), "letters, digits"),
    (dict(RELEASE_ARGS, patterns=[]), "give at least one"),
    (dict(RELEASE_ARGS, patterns=["etc/demo-*"]), "is not an absolute pattern below /"),
    (dict(RELEASE_ARGS, patterns=["/etc/../demo-*"]), "is not an absolute pattern below /"),
    (dict(RELEASE_ARGS, patterns=["/etc/x", "relative"]), "is not an absolute pattern below /"),
    (dict(RELEASE_ARGS, patterns=[5]), "is not an absolute pattern below /"),
    (dict(RELEASE_ARGS, patterns=["/var/lib/cpuinfer/releases/*"]), "can match the record store /var/lib/cpuinfer/releases"),
    (dict(RELEASE_ARGS, store="relative/store"), "store: 'relative/store' is not an absolute path"),
    (dict(RELEASE_ARGS, state="rolledback"), "value of state must be one of"),
    (dict(RELEASE_ARGS, state="rolled_back"), "no release has been recorded on this host"),
    (dict(RELEASE_ARGS, state="rolled_back", patterns=["/etc/none/*"]), "there is no earlier one", {RECORD: ONE_RELEASE}),
    (RELEASE_ARGS, "move it aside", {RECORD: "{not json"}),
    (RELEASE_ARGS, "record version 2", {RECORD: '{"version": 2}'}),
    (dict(RELEASE_ARGS, files=[{"path": "/etc/demo-a.service", "content": "x"}], state="rolled_back"),
     "with state=recorded only", {RECORD: ONE_RELEASE}),
    (dict(RELEASE_ARGS, files=[{"path": "/etc/demo-a.service", "content": "x", "mode": "rw"}]), "is not octal text"),
    (dict(RELEASE_ARGS, files=[{"path": "/etc/demo-a.service", "content": "x"}], directories=[{"path": "relative"}]),
     "is not an absolute path below /"),
    (RELEASE_ARGS, "move it aside", {RECORD: '{"version": 1}'}),
    (RELEASE_ARGS, "move it aside", {RECORD: '{"version": 1, "current": {"/x": {"mode": 1}}, "previous": null}'}),
    ({"patterns": ["/etc/x"]}, "missing required arguments: name"),
    ({"name": "demo"}, "missing required arguments: patterns"),
    (dict(RELEASE_ARGS, colour="red"), "Unsupported parameters"),
    (dict(RELEASE_ARGS, name="demo\n"), "letters, digits"),
    (dict(RELEASE_ARGS, patterns=["/var/lib/cpuinfer/*/demo.json"]), "can match the record store"),
    (dict(RELEASE_ARGS, patterns=["/var/lib//cpuinfer/releases/*"]), "can match the record store"),
    (dict(RELEASE_ARGS, patterns=["/var/lib/cpuinfer/rel*"]), "can match the record store"),
    (dict(RELEASE_ARGS, store="/var/lib/cpuinfer/releases/", patterns=["/var/lib/cpuinfer/releases/./*"]),
     "can match the record store"),
    (dict(RELEASE_ARGS, patterns=["/etc/x\x00"]), "without '..' or NUL bytes"),
    (dict(RELEASE_ARGS, state="rolled_back"), "move it aside",
     {RECORD: '{"version": 1, "current": {"/etc/systemd/system/demo-a.service": {"content": 5, "mode": 420, "uid": 0,'
              ' "gid": 0}}, "previous": null}'}),
    (dict(RELEASE_ARGS, state="rolled_back"), "move it aside",
     {RECORD: '{"version": 1, "current": {"/etc/systemd/system/demo-a.service": {"content": "x", "mode": "0644", "uid": 0,'
              ' "gid": 0}}, "previous": null}'}),
    (dict(RELEASE_ARGS, state="rolled_back"), "move it aside",
     {RECORD: '{"version": 1, "current": {"etc//x": {"content": "x", "mode": 420, "uid": 0, "gid": 0}}, "previous": null}'}),
    (dict(RELEASE_ARGS, state="rolled_back"), "holds /etc/passwd, which none of the patterns match",
     {RECORD: '{"version": 1, "current": {"/etc/passwd": {"content": "root::0:0::/:/bin/sh\\n", "mode": 420, "uid": 0,'
              ' "gid": 0}}, "previous": null}'}),
    (dict(RELEASE_ARGS, files=[{"path": "/etc/systemd/system/demo-a.service", "content": "x", "mode": 420}]),
     "mode 420 is a number"),
    (dict(RELEASE_ARGS, patterns=["/etc/linked.d/*"], files=[{"path": "/etc/linked.d/a", "content": "x"}]),
     "files path: /etc/linked.d/a leads through /etc/linked.d", linked("/etc/linked.d")),
    (RELEASE_ARGS, "store: /var/lib/cpuinfer/releases/record leads through /var/lib/cpuinfer",
     linked("/var/lib/cpuinfer")),
]
FILES = [
    ({"files": [{"path": "etc/x", "content": ""}]}, "is not an absolute path below /"),
    ({"files": [{"path": "/etc/../x", "content": ""}]}, "is not an absolute path below /"),
    ({"files": [{"path": "/", "content": ""}]}, "is not an absolute path below /"),
    ({"files": [{"path": "/etc/x"}]}, "one of the following is required: content, secret_content"),
    ({"files": [{"content": "x"}]}, "missing required arguments: path"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": "644x"}]}, "is not octal text"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": "0999"}]}, "is not octal text"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": "u=rw"}]}, "is not octal text"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": "0o644"}]}, "is not octal text"),
    ({"files": [{"path": "/etc/x", "content": "", "owner": "nobody-cpuinfer"}]}, "no user nobody-cpuinfer"),
    ({"files": [{"path": "/etc/x", "content": "", "group": "nogroup-cpuinfer"}]}, "no group nogroup-cpuinfer"),
    ({"files": [{"path": "/etc/x", "content": ""}, {"path": "/etc/x/", "content": "again"}]}, "listed twice"),
    ({"files": [{"path": "/etc/x", "content": ""}], "directories": [{"path": "/etc/x"}]}, "listed twice"),
    ({"files": [{"path": "/etc/x", "content": "", "secret_content": "TOKEN=1"}]}, "mutually exclusive"),
    ({"files": [{"path": "/etc/x", "content": "", "secret": True}]}, "Unsupported parameters"),
    ({"files": [{"path": "/etc/x", "content": "", "colour": "red"}]}, "Unsupported parameters"),
    ({"files": "/etc/x"}, "dictionary requested"),
    ({"directories": [{"path": "/etc/d", "mode": "rwx"}]}, "is not octal text"),
    ({"directories": [{"path": "relative"}]}, "is not an absolute path below /"),
    ({"files": [{"path": "/etc/demo.d", "content": "x"}]}, "is a directory, not a file"),
    ({"directories": [{"path": "/etc/systemd/system/existing.service"}]}, "is a file, not a directory"),
    ({"files": [{"path": "/etc/new.conf", "content": "x"}, {"path": "/etc/y", "content": "", "mode": "7777x"}]},
     "is not octal text"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": 420}]}, "mode 420 is a number, not octal text"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": 644}]}, "quote it: mode: '0644'"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": True}]}, "mode True is not octal text"),
    ({"files": [{"path": "/etc/x", "content": "", "mode": "0644\n"}]}, "is not octal text"),
    ({"files": [{"path": "/etc/x\x00y", "content": ""}]}, "without '..' or NUL bytes"),
    ({"files": [{"path": "/etc/x", "content": "", "owner": "ro\x00ot"}]}, "no user 'ro\\x00ot' on this host"),
    ({"files": [{"path": "/etc/x", "content": "", "group": "ro\x00ot"}]}, "no group 'ro\\x00ot' on this host"),
    ({"files": [{"path": "/etc//x", "content": ""}, {"path": "/etc/./x", "content": "again"}]}, "/etc/x is listed twice"),
    ({"files": [{"path": "/etc/x", "content": ""}], "report": ["/etc/\x00"]}, "report: '/etc/\\x00' is not an absolute path"),
    ({"files": [{"path": "/etc/linked.d/x.conf", "content": "x"}]}, "leads through /etc/linked.d, a symbolic link to /tmp",
     linked("/etc/linked.d")),
    ({"directories": [{"path": "/etc/linked.d/sub"}]}, "directories path: /etc/linked.d/sub leads through /etc/linked.d",
     linked("/etc/linked.d", "../var")),
    ({"absent": ["/"]}, "absent path: '/' is not an absolute path below /"),
    ({"absent": ["/etc/demo.d"], "files": [{"path": "/etc/demo.d/x.conf", "content": "x"}]},
     "/etc/demo.d/x.conf is both written and removed (absent /etc/demo.d)"),
    ({"absent": ["/etc/linked.d/x.conf"]}, "absent path: /etc/linked.d/x.conf leads through /etc/linked.d",
     linked("/etc/linked.d")),
]


def _facts_host(mutate):
    def build(root, monkeypatch):
        xeon_tree(root)
        mutate(Path(root))
    return build


def _unlink(relative):
    return lambda root: (root / relative.lstrip("/")).unlink()


def _write(files):
    return lambda root: write_tree(root, files)


FACTS = [
    ({}, "sysfs is inconsistent: /sys/devices/system/cpu/online lists CPUs 64-127", _write({CPU + "online": "0-127\n"})),
    ({}, "CPUs 1 have no topology/physical_package_id", _unlink(CPU + "cpu1/topology/physical_package_id")),
    ({}, "physical_package_id holds 'zz', not a number", _write({CPU + "cpu1/topology/physical_package_id": "zz\n"})),
    ({}, "physical_package_id holds '１', not a number", _write({CPU + "cpu1/topology/physical_package_id": "１\n"})),
    ({}, "index3/level holds 'three', not a number", _write({CPU + "cpu0/cache/index3/level": "three\n"})),
    ({}, "index3/level holds '３', not a number", _write({CPU + "cpu0/cache/index3/level": "３\n"})),
    ({}, "malformed CPU list element 'x'", _write({CPU + "online": "x\n"})),
    ({}, "malformed CPU list element '0-'", _write({CPU + "online": "0-\n"})),
    ({}, "reversed range '7-0'", _write({CPU + "online": "7-0\n"})),
    ({}, "malformed CPU list element 'a'", _write({CPU + "cpu0/cache/index3/shared_cpu_list": "a\n"})),
    ({}, "unknown size 'big'", _write({CPU + "cpu0/cache/index3/size": "big\n"})),
    ({}, "unknown size '３２K'", _write({CPU + "cpu0/cache/index3/size": "３２K\n"})),
    ({}, "cannot read", _unlink("/proc/cpuinfo")),
    ({}, "cannot read", _unlink("/proc/mounts")),
    ({}, "cannot read", _unlink(CPU + "cpu0/cache/index3/type")),
    ({}, "malformed CPU list element '?'", _write({"/sys/devices/system/node/node0/cpulist": "?\n"})),
    ({}, "malformed CPU list element 'zz'", _write({CPU + "cpu0/topology/thread_siblings_list": "zz\n"})),
    ({}, "sysfs is inconsistent", _write({CPU + "online": "0-63,200\n"})),
    ({}, "CPUs 0 have no topology/physical_package_id", _unlink(CPU + "cpu0/topology/physical_package_id")),
    ({}, "Unsupported parameters", _write({})),
]
FACTS[-1] = ({"colour": "red"},) + FACTS[-1][1:]


def _midr_garbage(root):
    kunpeng_tree(root)
    write_tree(root, {CPU + "cpu0/regs/identification/midr_el1": "0xnothex\n"})


def _cases():
    table = [(thp, thp_host, THP), (perf_paranoid, perf_host, PERF), (cgroup_v2, cgroup_host, CGROUP),
             (rdt_cat, rdt_host, RDT), (irq_affinity, irq_host, IRQ), (sched_policy, sched_host, SCHED),
             (sysctl, sysctl_host, SYSCTL), (kernel_settings, kernel_host, KERNEL), (managed_files, files_host, FILES),
             (release, files_host, RELEASE)]
    for module, build, cases in table:
        for entry in cases:
            args, words = entry[0], entry[1]
            files = entry[2] if len(entry) > 2 else {}
            yield module, build, args, words, files
    for args, words, mutate in FACTS:
        yield host_facts, _facts_host(mutate), args, words, {}
    yield host_facts, lambda root, monkeypatch: _midr_garbage(root), {}, "midr_el1 holds '0xnothex', not a number", {}


CASES = list(_cases())


def _name(module):
    return module.__name__.rsplit(".", 1)[1]


def refusal(run_module, monkeypatch, tmp_path, module, build, args, files):
    build(tmp_path, monkeypatch)
    if callable(files):
        files(tmp_path)
    else:
        write_tree(tmp_path, files)
    before = full_snapshot(tmp_path)
    failed, result = run_module(module, dict(args, root=str(tmp_path)))
    message = result.get("msg", "").replace(str(tmp_path), "ROOT").replace("(basic.py)", "(MODULE)")
    # ansible-core lists the boolean spellings from a set: their order changes from run to run
    message = re.sub(r"Valid booleans include: .*", "Valid booleans include: yes, no, true, false, ...", message)
    return failed, result, message, full_snapshot(tmp_path) == before


@pytest.mark.parametrize("module,build,args,words,files", CASES,
                         ids=["%s-%d" % (_name(c[0]), i) for i, c in enumerate(CASES)])
def test_refused_with_a_clear_message_and_nothing_written(run_module, monkeypatch, tmp_path, module, build, args,
                                                          words, files):
    failed, result, message, unchanged = refusal(run_module, monkeypatch, tmp_path, module, build, args, files)
    assert failed, result
    assert words in message, message
    assert "exception" not in result and "internal error" not in message
    assert unchanged


def test_every_module_has_twenty_bad_inputs():
    counts = {}
    for case in CASES:
        counts[_name(case[0])] = counts.get(_name(case[0]), 0) + 1
    assert len(counts) == 11 and min(counts.values()) >= 20, counts


def _cell(value):
    return str(value).replace("|", "\\|").replace("\n", " ")


def render(run_module, monkeypatch, tmp_root):
    lines = ["# Bad inputs and what each module answers", "",
             "Generated from `tests/unit/plugins/modules/test_bad_inputs.py` (`CPUINFER_WRITE_DOCS=1 scripts/test units`",
             "rewrites it); each row is a test that checks the refusal, that no traceback comes with it and that the",
             "host's files are unchanged. Messages are verbatim; ROOT stands for the module's `root`, MODULE for its",
             "name.", ""]
    current = None
    for index, (module, build, args, words, files) in enumerate(CASES):
        if _name(module) != current:
            current = _name(module)
            lines += ["", "## %s" % current, "", "| input | host files | message |", "|---|---|---|"]
        directory = tmp_root / str(index)
        directory.mkdir()
        dummy_failed, dummy_result, message, dummy = refusal(run_module, monkeypatch, directory, module, build, args, files)
        host = files.shown if callable(files) else ", ".join("`%s` = %r" % (path, text.strip()) for path, text in files.items())
        if module is host_facts and not host:
            host = "see the test"
        lines.append("| `%s` | %s | %s |" % (_cell(args), _cell(host), _cell(message)))
    return "\n".join(lines) + "\n"


def test_docs_table_is_current(run_module, monkeypatch, tmp_path):
    text = render(run_module, monkeypatch, tmp_path)
    if os.environ.get("CPUINFER_WRITE_DOCS"):
        DOC.write_text(text, encoding="utf-8")
    assert DOC.exists() and DOC.read_text(encoding="utf-8") == text, "run CPUINFER_WRITE_DOCS=1 scripts/test units"
