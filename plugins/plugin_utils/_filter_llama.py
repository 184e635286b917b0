# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_server instances as they will run: defaults, threads, memory limits derived from the model.

The code of the llama filters (plugins/filter/llama.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import inference_threads, whole_number
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_engine_settings import engine_settings, numa_mode, resolve_engine
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import parse_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._sizes import SizeError, UNLIMITED, format_size, parse_size

MIB = 1 << 20
# Bytes per KV cache element of each llama.cpp cache type (block types: block bytes / 32 values).
CACHE_TYPE_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32,
                    "iq4_nl": 18 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32}
# Memory an engine needs besides weights and KV cache: its code, compute buffers for one ubatch, the
# HTTP server (and for the Python engine the interpreter and its libraries). Measured on the lab's
# tiny models (docs/llama_server.md); larger models add compute buffers that the factors below cover.
ENGINE_OVERHEAD = {"llama-server": 96 * MIB, "ik_llama.cpp": 96 * MIB, "llama-cpp-python": 192 * MIB}
# The tree each engine is built from (roles/llama_server/files/engine_sources.py); the engines that are
# llama.cpp's HTTP server (slots, /health, /metrics, the unit's key as a file) are those with flags.
ENGINE_SOURCE = {"llama-server": "llama.cpp", "llama-cpp-python": "llama.cpp", "ik_llama.cpp": "ik_llama.cpp"}
HIGH_FACTOR = 1.15
MAX_FACTOR = 1.35


def _mib_up(value):
    return -(-int(value) // MIB) * MIB


def model_memory(model, n_ctx, parallel=1, cache_type_k="f16", cache_type_v="f16", engine="llama-server", prompt_cache=0):
    """{weights, kv_cache, need, memory_high, memory_max} in bytes for one instance of a model
    (model: the metadata check_gguf.py prints; prompt_cache: bytes of the engine's prompt cache in RAM)."""
    try:
        tokens = whole_number(n_ctx, "n_ctx") * whole_number(parallel, "parallel")
        per_token_layer = model["head_count_kv"] * (model["key_length"] * CACHE_TYPE_BYTES[cache_type_k]
                                                    + model["value_length"] * CACHE_TYPE_BYTES[cache_type_v])
        kv_cache = int(tokens * model["layers"] * per_token_layer)
        need = model["bytes"] + kv_cache + int(prompt_cache) + ENGINE_OVERHEAD[engine]
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("model_memory: needs the metadata of check_gguf.py and known types: %s" % exc)
    return {"weights": model["bytes"], "kv_cache": kv_cache, "need": need,
            "memory_high": _mib_up(need * HIGH_FACTOR), "memory_max": _mib_up(need * MAX_FACTOR)}


def extra_args_problems(name, args, flags, engine="llama-server"):
    """Words of extra_args that are not a flag the engine allows (flags: engine -> allowed flags) or a flag's value."""
    problems = []
    allowed = flags.get(engine, [])
    for index, word in enumerate(args or []):
        flag = word.split("=", 1)[0] if isinstance(word, str) else None
        others = sorted(other for other, listed in flags.items() if other != engine and flag in listed)
        if not isinstance(word, str):
            problems.append("instance %s: extra_args[%d] %r is not text" % (name, index, word))
        elif word.startswith("-") and flag not in allowed and others:
            problems.append("instance %s: extra_args flag %s is %s's; engine %s has no such flag" % (
                name, word, " and ".join(others), engine))
        elif word.startswith("-") and flag not in allowed:
            problems.append("instance %s: extra_args flag %s is not allowed for engine %s (allowed: %s)" % (
                name, word, engine, ", ".join(allowed)))
        elif not word.startswith("-") and (index == 0 or not str(args[index - 1]).startswith("-")):
            problems.append("instance %s: extra_args word %r follows no flag" % (name, word))
    return problems


# V cache types that need flash attention (llama.cpp and ik_llama.cpp alike); both units run with it on.
NEEDS_FLASH_ATTENTION = ("q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
FLASH_ATTENTION_OFF = (("--flash-attn", "off"), ("--flash-attn", "0"), ("-fa", "off"), ("-fa", "0"))


def _flash_attention_problems(instance):
    """A quantised V cache in an instance whose extra_args turn flash attention off: the engine would refuse
    to start, so the role refuses first."""
    args = [str(word) for word in instance.get("extra_args") or []]
    pairs = list(zip(args, args[1:] + [""])) + [tuple(word.split("=", 1)) for word in args if "=" in word]
    if instance.get("cache_type_v") in NEEDS_FLASH_ATTENTION and (
            "--no-flash-attn" in args or "-no-fa" in args or any(pair in FLASH_ATTENTION_OFF for pair in pairs)):
        return ["instance %s: a quantised V cache (%s) needs flash attention, which its extra_args turn off" % (
            instance.get("name", "?"), instance["cache_type_v"])]
    return []


def _size_or_none(value):
    try:
        return parse_size(value) if value not in ("", None) else None
    except SizeError:
        return None


def _memory(instance, model, problems):
    """(memory_high, memory_max) as the unit writes them; derived where not given."""
    name = instance["name"]
    given_high, given_max = _size_or_none(instance.get("memory_high")), _size_or_none(instance.get("memory_max"))
    for key in ("memory_high", "memory_max"):
        if instance.get(key) not in ("", None) and _size_or_none(instance.get(key)) is None:
            problems.append("instance %s: %s %r is not a size (bytes, K/M/G/T or max)" % (name, key, instance[key]))
    if model is None:
        if given_max is None:
            problems.append("instance %s: give memory_max for a model the controller cannot read (%s): the limits are "
                            "derived from the GGUF file" % (name, instance["model"]))
        return instance.get("memory_high") or "", instance.get("memory_max") or ""
    derived = model_memory(model, instance["n_ctx"], instance["parallel"], instance["cache_type_k"],
                           instance["cache_type_v"], instance["engine"], instance["cache_ram_mib"] * MIB)
    if given_max not in (None, UNLIMITED) and given_max < model["bytes"]:
        problems.append("instance %s: memory_max %s is below the model's weights (%s): it could never load"
                        % (name, instance["memory_max"], format_size(model["bytes"])))
    high = instance.get("memory_high") or (format_size(derived["memory_high"]) if given_max is None else "")
    maximum = instance.get("memory_max") or format_size(derived["memory_max"])
    return high, maximum


def _prompt_cache_mib(instance, model, problems):
    """MiB of the engine's prompt cache in RAM (--cache-ram): given, else as large as the instance's KV cache
    (the engines' own default, 8 GiB, is counted in no memory limit); 0 for an engine without one."""
    given = instance.get("cache_ram")
    if not instance["http_server"]:
        return 0
    if given not in ("", None):
        size = _size_or_none(given)
        if size is None or size == UNLIMITED:
            problems.append("instance %s: cache_ram %r is not a size (bytes or K/M/G/T; 0 turns the prompt cache off)"
                            % (instance["name"], given))
            return 0
        return _mib_up(size) // MIB
    if model is None:
        return 0
    try:
        kv_cache = model_memory(model, instance["n_ctx"], instance["parallel"], instance["cache_type_k"],
                                instance["cache_type_v"], instance["engine"])["kv_cache"]
    except AnsibleFilterError:
        return 0
    return _mib_up(kv_cache) // MIB


PLACEMENTS = ("single", "per_node", "per_l3")


def _node_of(cpus, numa_nodes):
    """The NUMA node holding the first CPU of a CPU list (an L3 domain lies within one node)."""
    first = min(parse_cpulist(cpus))
    for node in numa_nodes or []:
        if first in parse_cpulist(node["cpus"]):
            return int(node["id"])
    return 0


def placement_domains(placement, cpu_plan, numa_nodes):
    """[(suffix, node, cpus)] an instance of this placement is copied over: one per NUMA node or L3
    domain of the host's inference CPUs (host_tuning's cpu_plan)."""
    if placement == "per_node":
        return [("node%d" % int(d["node"]), int(d["node"]), d["cpus"]) for d in (cpu_plan or {}).get("inference_by_node", [])]
    return [("l3-%d" % index, _node_of(cpus, numa_nodes), cpus)
            for index, cpus in enumerate((cpu_plan or {}).get("inference_by_l3", []))]


def _placed(given, defaults, cpu_plan, numa_nodes, problems):
    """The instances one entry of llama_server_instances becomes: itself (single), or one per domain,
    named NAME-node<id> / NAME-l3-<index>, port + index, its CPUs and memory on that domain's node."""
    placement = given.get("placement") or defaults.get("placement") or "single"
    name = given.get("name", "?")
    if placement not in PLACEMENTS:
        problems.append("instance %s: placement %r is not one of %s" % (name, placement, ", ".join(PLACEMENTS)))
        return [dict(given, base_name=name)]
    if placement == "single":
        return [dict(given, base_name=name)]
    if given.get("allowed_cpus") or given.get("allowed_memory_nodes"):
        problems.append("instance %s: placement %s places its CPUs and memory itself; leave allowed_cpus and "
                        "allowed_memory_nodes out" % (name, placement))
    domains = placement_domains(placement, cpu_plan, numa_nodes)
    if not domains:
        problems.append("instance %s: placement %s needs host_tuning's CPU plan (host_tuning_cpu_plan) with %s"
                        % (name, placement, "NUMA nodes" if placement == "per_node" else "L3 domains"))
    port = whole_number(given.get("port", 0), "instance %s: port" % name)
    return [dict(given, name="%s-%s" % (name, suffix), base_name=name, port=port + index, allowed_cpus=cpus,
                 allowed_memory_nodes=str(node), numa_policy=given.get("numa_policy") or "bind")
            for index, (suffix, node, cpus) in enumerate(domains)]


def llama_instances(instances, defaults, allowed_cpus, core_cpus, models, extra_flags, cpu_plan=None, numa_nodes=None,
                    calibrations=None):
    """{'instances': [...], 'problems': [...]}: each instance with the role's defaults, the unit's CPUs,
    its engine, threads and ubatch (given, else its model's calibration on this class - calibrations:
    model sha256 -> calibration document, whose served winner engine auto takes - else derived), its --numa mode (given, else from its placement) and its
    memory limits (derived from models[name], check_gguf.py's metadata, where not given), an instance
    with placement per_node or per_l3 copied once per NUMA node or L3 domain of cpu_plan; problems lists
    every request the role must refuse, all at once."""
    result, problems = [], []
    placed = []
    for given in instances or []:
        placed += _placed(given, defaults, cpu_plan, numa_nodes, problems)
    for given in placed:
        instance = dict(defaults)
        instance["allowed_cpus"] = allowed_cpus or ""
        instance.update(given)
        name = instance.get("name", "?")
        if instance.get("best_effort"):
            # batch serving in the best-effort slice: its CPUs are the slice's (housekeeping, and cores
            # slo_controller lends), so the unit sets none; threads fit the housekeeping cores
            if (given.get("placement") or "single") != "single" or given.get("base_name") != name:
                problems.append("instance %s: best_effort runs in the best-effort slice, not placed per domain" % name)
            instance["allowed_cpus"] = given.get("allowed_cpus") or ""
            own = instance["allowed_cpus"] or (cpu_plan or {}).get("housekeeping") or ""
            cores = inference_threads(core_cpus, own, instance.get("cpu_quota") or 0)
        else:
            cores = inference_threads(core_cpus, instance["allowed_cpus"], instance.get("cpu_quota") or 0)
            if not instance.get("numa"):
                instance["numa"] = numa_mode(instance["allowed_cpus"], name != instance["base_name"], numa_nodes)
        resolve_engine(instance, calibrations)
        if instance["engine"] not in ENGINE_SOURCE:
            problems.append("instance %s: engine %r is not one of %s" % (name, instance["engine"], ", ".join(sorted(ENGINE_SOURCE))))
            continue
        instance["cores"] = cores
        engine_settings(instance, given, cores, calibrations, problems)
        if whole_number(instance["parallel"], "instance %s: parallel" % name) < 1:
            problems.append("instance %s: parallel must be at least 1" % name)
        if instance["engine"] == "llama-cpp-python" and int(instance["parallel"]) != 1:
            problems.append("instance %s: the llama-cpp-python engine serves one request at a time; use engine "
                            "llama-server for parallel %s" % (name, instance["parallel"]))
        instance["source"] = ENGINE_SOURCE[instance["engine"]]
        instance["http_server"] = instance["engine"] != "llama-cpp-python"
        if instance.get("extra_args") and not instance["http_server"]:
            problems.append("instance %s: extra_args are llama.cpp server flags; engine %s takes none" % (name, instance["engine"]))
        problems += extra_args_problems(name, instance.get("extra_args"), extra_flags, instance["engine"])
        problems += _flash_attention_problems(instance)
        model = (models or {}).get(instance["base_name"])
        instance["cache_ram_mib"] = _prompt_cache_mib(instance, model, problems)
        instance["memory_high"], instance["memory_max"] = _memory(instance, model, problems)
        instance["ctx_total"] = int(instance["n_ctx"]) * int(instance["parallel"])
        result.append(instance)
    for what in ("name", "port"):
        values = [str(instance.get(what)) for instance in result]
        twice = sorted(set(v for v in values if values.count(v) > 1))
        if twice:
            problems.append("instances as placed share a %s: %s (per_node and per_l3 add the domain's index to "
                            "the port and its name to the name)" % (what, ", ".join(twice)))
    return {"instances": result, "problems": problems}


def _older(a, b):
    if a is None or b is None:
        return None
    return a if tuple(int(x) for x in a.split(".")) <= tuple(int(x) for x in b.split(".")) else b


INSTANCE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def llama_instance_problems(instances, host_facts, host="this host"):
    """What makes a host's instances unusable before anything is planned, every problem at once: a name other
    than [a-z0-9-] (it names units and files), a model_sha256 other than 64 hex digits, a port that is not a
    positive number, a port two instances share; and a host of no llama.cpp build class (host_facts:
    ansible_facts.cpuinfer)."""
    problems = []
    ports = {}
    for instance in instances or []:
        name = str(instance.get("name", "?"))
        try:
            port = int(instance.get("port"))
        except (TypeError, ValueError):
            port = 0
        if not (INSTANCE_NAME.match(name) and SHA256.match(str(instance.get("model_sha256", ""))) and port > 0):
            problems.append("instance %s: name [a-z0-9-], a 64-hex model_sha256 and a positive port are required" % name)
        ports.setdefault(port, []).append(name)
    problems += ["port %d is given to more than one instance (%s)" % (port, ", ".join(names))
                 for port, names in sorted(ports.items()) if port > 0 and len(names) > 1]
    if host_facts.get("llama_build_class") is None:
        problems.append("%s is %s (host_facts platform %s): llama.cpp builds exist for x86_64 and aarch64 classes only; "
                        "leave this host out of llama_server (an empty llama_server_instances) or add a class for it"
                        % (host, (host_facts.get("os") or {}).get("architecture", "?"), host_facts.get("platform", "?")))
    return problems


def llama_build_sources(instances, default_engine="llama-server"):
    """The engine sources (ENGINE_SOURCE's values) that a host's instances need built, sorted."""
    sources = set()
    for instance in instances or []:
        engine = instance.get("engine") or default_engine
        if engine not in ENGINE_SOURCE:
            raise AnsibleFilterError("instance %s: engine %r is not one of %s"
                                     % (instance.get("name", "?"), engine, ", ".join(sorted(ENGINE_SOURCE))))
        sources.add(ENGINE_SOURCE[engine])
    return sorted(sources)


def llama_build_classes(hosts, hostvars, kleidiai_classes=(), build_hosts=None):
    """One build per (engine source, CPU class, distribution, release, Python) among hosts that run
    instances (each host's __llama_server_build_sources), for the oldest glibc/libstdc++ among them;
    KleidiAI added to mainline builds of the aarch64 classes named; the build host named for the
    class, else for its machine, else None (the controller)."""
    build_hosts = build_hosts or {}
    builds = {}
    for host in hosts:
        variables = hostvars[host]
        sources = variables.get("__llama_server_build_sources") or []
        if not sources:
            continue
        cpu = variables["ansible_facts"]["cpuinfer"]
        runtime, system = cpu.get("runtime") or {}, cpu.get("os")
        if not runtime.get("glibc"):
            raise AnsibleFilterError("%s has no glibc that host_facts could read: the engine is built for glibc hosts" % host)
        if not system:
            raise AnsibleFilterError("%s: host_facts of this release (with os) are needed to key its build" % host)
        python = system["python"]
        for source in sources:
            cmake_args = list(cpu["llama_cmake_args"])
            if cpu["llama_build_class"] in kleidiai_classes and source == "llama.cpp":
                if cpu["arch"] != "aarch64":
                    raise AnsibleFilterError("KleidiAI is for aarch64 classes; %s is %s" % (cpu["llama_build_class"], cpu["arch"]))
                cmake_args.append("-DGGML_CPU_KLEIDIAI=ON")
            key = (source, cpu["llama_build_class"], system["distribution"], system["release"], python)
            build = builds.setdefault(key, {
                "source": source, "build_class": cpu["llama_build_class"], "cmake_args": cmake_args,
                "machine": system["architecture"], "python": python, "distribution": system["distribution"],
                "release": system["release"], "glibc": runtime["glibc"], "glibcxx": runtime.get("glibcxx"), "hosts": [],
                "build_host": build_hosts.get(cpu["llama_build_class"]) or build_hosts.get(system["architecture"])})
            build["glibc"] = _older(build["glibc"], runtime["glibc"])
            build["glibcxx"] = _older(build["glibcxx"], runtime.get("glibcxx"))
            build["hosts"].append(host)
    return [builds[key] for key in sorted(builds)]


def llama_build_argv(build, versions, mirror, constraints):
    """llama_build.py's arguments for one entry of llama_build_classes (no --cache, no --plan); versions:
    engine source -> pinned release (a string: mainline's)."""
    source = build.get("source", "llama.cpp")
    version = versions.get(source) if isinstance(versions, dict) else versions
    if not version:
        raise AnsibleFilterError("no pinned release of %s among %s" % (source, versions))
    argv = ["--engine", source, "--version", version, "--build-class", build["build_class"], "--machine", build["machine"],
            "--python-version", build["python"], "--distribution", build["distribution"], "--release", build["release"],
            "--glibc", build["glibc"], "--mirror", mirror, "--constraints", constraints]
    if build.get("glibcxx"):
        argv += ["--glibcxx", build["glibcxx"]]
    return argv + ["--cmake-arg=" + arg for arg in build["cmake_args"]]
