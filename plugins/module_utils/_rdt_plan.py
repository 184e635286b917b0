# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdt_cat requests checked against the host's own resctrl info/: masks, bandwidth, domains, CLOSIDs.
Pure functions; nothing here writes."""

from __future__ import absolute_import, division, print_function

import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._resctrl import CACHE_RESOURCES, MB_RESOURCE

__metaclass__ = type

INTEL_MB_MAX = 100
_HEX_MASK = re.compile(r"(0[xX])?[0-9a-fA-F]+\Z")


def _contiguous(mask):
    low = mask & -mask
    return mask != 0 and ((mask + low) & mask) == 0


def _bit_usage(info_entry, domain):
    """bit_usage 'D=SSSSHHHH;...' -> string for domain, most significant bit first, or ''."""
    for part in str(info_entry.get("bit_usage", "")).split(";"):
        if part.startswith(str(domain) + "="):
            return part.split("=", 1)[1]
    return ""


def check_cache(resource, domain, text, entry, problems, warnings):
    """Canonical mask text ('f00') or None."""
    if isinstance(text, int) and not isinstance(text, bool):
        # YAML reads an unquoted 0xff as the integer 255: taken as text it would be the mask 0x255
        problems.append("%s domain %s: %r is a number, not a hex mask; quote the mask (0xff unquoted is 255 to YAML)"
                        % (resource, domain, text))
        return None
    if not isinstance(text, str) or not _HEX_MASK.match(text.strip()):
        problems.append("%s domain %s: %r is not a hex mask" % (resource, domain, text))
        return None
    mask = int(text.strip(), 16)
    full = entry.get("cbm_mask", 0)
    label = "%s domain %s mask %x" % (resource, domain, mask)
    if mask & ~full:
        problems.append("%s has bits outside cbm_mask %x" % (label, full))
    if bin(mask).count("1") < entry.get("min_cbm_bits", 1):
        problems.append("%s sets fewer than min_cbm_bits=%d bits" % (label, entry.get("min_cbm_bits", 1)))
    if mask and not _contiguous(mask) and entry.get("sparse_masks", 0) != 1:
        problems.append("%s is not contiguous (this CPU needs contiguous masks; sparse_masks=0)" % label)
    if mask & entry.get("shareable_bits", 0):
        warnings.append("%s overlaps shareable_bits %x (used by other agents, e.g. I/O)" % (label, entry["shareable_bits"]))
    usage = _bit_usage(entry, domain)
    width = len(usage)
    for bit in range(width):
        if mask >> bit & 1:
            marker = usage[width - 1 - bit]
            if marker in "EP":
                problems.append("%s: bit %d is %s by another group" % (label, bit, "exclusive" if marker == "E" else "pseudo-locked"))
            elif marker in "HX":
                warnings.append("%s: bit %d is also used by hardware (bit_usage %s)" % (label, bit, marker))
    return "%x" % mask


def check_mb(domain, text, entry, amd_max, mba_mbps, problems):
    if isinstance(text, bool) or not (isinstance(text, int) or is_decimal(str(text).strip())):
        problems.append("MB domain %s: %r is not a whole number" % (domain, text))
        return None
    value = int(str(text).strip())
    if mba_mbps:
        if value < 1:
            problems.append("MB domain %s: %d MB/s must be at least 1 (mounted with mba_MBps)" % (domain, value))
    elif amd_max is not None:
        if not 1 <= value <= amd_max:
            problems.append("MB domain %s: %d is outside 1..%d (AMD units of 1/8 GB/s)" % (domain, value, amd_max))
    else:
        low, step = entry.get("min_bandwidth", 10), entry.get("bandwidth_gran", 10)
        if not low <= value <= INTEL_MB_MAX:
            problems.append("MB domain %s: %d%% is outside %d..%d" % (domain, value, low, INTEL_MB_MAX))
        elif value % step:
            problems.append("MB domain %s: %d%% is not a multiple of bandwidth_gran %d" % (domain, value, step))
    return str(value)


def wanted_schemata(request, info, default_schemata, current_schemata, amd, mba_mbps, problems, warnings):
    """{resource: {domain: value}}: full lines, requested domains over the current values."""
    wanted = {}
    for resource, value in sorted((request or {}).items()):
        if resource not in CACHE_RESOURCES + (MB_RESOURCE,):
            problems.append("unknown resource %r: resctrl names them %s" % (resource, ", ".join(CACHE_RESOURCES + (MB_RESOURCE,))))
            continue
        if resource not in info or resource not in default_schemata:
            problems.append("this host does not offer %s (it offers: %s)" % (resource, ", ".join(sorted(default_schemata)) or "nothing"))
            continue
        domains = sorted(default_schemata[resource], key=int)
        if isinstance(value, (list, tuple)):
            problems.append("%s: give one value for every domain or a dict of domain to value, not a list" % resource)
            continue
        given = dict((str(k), v) for k, v in value.items()) if isinstance(value, dict) else dict((d, value) for d in domains)
        unknown = sorted(set(given) - set(domains), key=str)
        if unknown:
            problems.append("%s has no domain %s (domains: %s)" % (resource, ", ".join(unknown), ", ".join(domains)))
            continue
        line = dict(current_schemata.get(resource) or default_schemata[resource])
        for domain, text in given.items():
            if resource == MB_RESOURCE:
                amd_max = int(default_schemata[resource][domain]) if amd else None
                checked = check_mb(domain, text, info[resource], amd_max, mba_mbps, problems)
            else:
                checked = check_cache(resource, domain, text, info[resource], problems, warnings)
            if checked is not None:
                line[domain] = checked
        wanted[resource] = line
    return wanted


def normalised(resource, line):
    """Compare masks as numbers (the kernel may print leading zeros), bandwidth as given."""
    if resource == MB_RESOURCE:
        return dict((d, str(int(v))) for d, v in line.items())
    return dict((d, "%x" % int(v, 16)) for d, v in line.items())


def monitor_groups(monitor, problems):
    """{name: [pids]} from the monitor option, which must map names to lists of process ids."""
    if not monitor:
        return {}
    if not isinstance(monitor, dict):
        problems.append("monitor must be a dict of monitoring group name to a list of pids, not %r" % (monitor,))
        return {}
    groups = {}
    for name, pids in sorted(monitor.items()):
        if not name or "/" in name or name in (".", ".."):
            problems.append("monitor group name %r is not allowed" % (name,))
        elif not isinstance(pids, list) or not all(is_decimal(str(pid)) and not isinstance(pid, bool) for pid in pids):
            problems.append("monitor[%s] must be a list of process ids, not %r" % (name, pids))
        else:
            groups[name] = [int(str(pid)) for pid in pids]
    return groups


def closids_left(info, group_count):
    """How many more groups the host's CLOSIDs allow (the default group holds one)."""
    limits = [entry["num_closids"] for entry in info.values() if "num_closids" in entry]
    return (min(limits) if limits else 0) - group_count - 1


def render(state):
    """Stable text of a before/after state for diff output."""
    lines = ["exists = %s\n" % state.get("exists")]
    for resource in sorted(state.get("schemata", {})):
        domains = state["schemata"][resource]
        lines.append("%s = %s\n" % (resource, ";".join("%s=%s" % (d, domains[d]) for d in sorted(domains, key=int))))
    lines.append("cpus = %s\ntasks = %s\n" % (state.get("cpus", ""), state.get("tasks", 0)))
    return "".join(lines)
