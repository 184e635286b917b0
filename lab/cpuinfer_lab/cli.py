"""Command line of the lab: image, up, down, status, inventory, ssh."""

import argparse
import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from . import accel, image, preflight, threads, topology, vm


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_image(args) -> int:
    arches = image.ARCHES if args.arch == "all" else [args.arch]
    if args.check:
        return 0 if all(image.image_for(arch).ready for arch in arches) else 3
    for arch in arches:
        built = image.build(arch, log=_log)
        print(built.directory)
    return 0


def _molecule_instances(records) -> list[dict]:
    return [
        {"instance": r.name, "address": vm.LOOPBACK, "user": "lab", "port": r.ssh_port, "identity_file": r.identity_file}
        for r in records
    ]


def cmd_up(args) -> int:
    if args.only and (args.specs or args.names):
        _log("lab: --only picks VMs of a topology; with --specs or VM names, list just the VMs to boot")
        return 2
    if args.specs:
        specs = topology.Topology(vms=json.loads(args.specs)).specs()
    elif args.names:
        specs = [vm.VmSpec(name=n, arch=args.arch, cpus=args.cpus, memory_mb=args.memory,
                           cpu_model=args.cpu_model, accel=args.accel, forwards=args.forward, boot=args.boot)
                 for n in args.names]
    else:
        specs = topology.load(args.topology).specs()
        unknown = set(args.only) - {spec.name for spec in specs}
        if unknown:
            _log(f"lab: not in {args.topology}: {', '.join(sorted(unknown))}")
            return 2
        specs = [spec for spec in specs if not args.only or spec.name in args.only]
    for spec in specs:
        spec.accel = accel.resolve(spec.accel, spec.arch, log=_log)
        spec.pin = spec.pin or args.pin
    records = vm.start_many(specs, boot_timeout=args.boot_timeout, log=_log)
    if args.format == "json":
        print(json.dumps([asdict(r) for r in records], indent=2))
    elif args.format == "molecule":
        print(json.dumps(_molecule_instances(records), indent=2))
    else:
        for record in records:
            print(f"{record.name}\t{record.arch}\tssh -i {record.identity_file} -p {record.ssh_port} lab@127.0.0.1")
    return 0


def cmd_down(args) -> int:
    names = [r.name for r in vm.list_running()] if args.all else args.names
    for name in names:
        if vm.stop(name):
            _log(f"lab: stopped {name}")
    return 0


def cmd_status(_args) -> int:
    for record in vm.list_running():
        print(f"{record.name}\t{record.arch}\t{record.accel}\t127.0.0.1:{record.ssh_port}\t{record.serial_log}")
    return 0


def cmd_inventory(args) -> int:
    inventory = topology.load(args.topology).inventory(vm.list_running())
    text = json.dumps(inventory, indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


def cmd_threads(args) -> int:
    """The VM's qemu threads with their CPU seconds so far, and where they are pinned (JSON)."""
    pid = vm.running_pid(args.name)
    if pid is None:
        _log(f"lab: {args.name} is not running")
        return 1
    record = vm.load_record(args.name)
    print(json.dumps({"name": args.name, "pinning": record.pinning if record else {}, "threads": threads.threads(pid)}))
    return 0


def cmd_ssh(args) -> int:
    record = vm.load_record(args.name)
    if record is None or vm.running_pid(args.name) is None:
        _log(f"lab: {args.name} is not running")
        return 1
    return subprocess.run([*vm.ssh_argv(record, args.user), *args.command], check=False).returncode


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="lab", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("image", help="build (or reuse) the cached base image")
    p.add_argument("--arch", default="amd64", choices=[*image.ARCHES, "all"])
    p.add_argument("--check", action="store_true", help="build nothing: exit 0 when cached, 3 when a build is due")
    p.set_defaults(func=cmd_image)

    p = sub.add_parser("up", help="boot VMs by name, or the whole topology when no name is given")
    p.add_argument("names", nargs="*")
    p.add_argument("--arch", default="amd64", choices=image.ARCHES)
    p.add_argument("--cpus", type=int, default=1)
    p.add_argument("--memory", type=int, default=1024, help="MiB")
    p.add_argument("--cpu-model", default="")
    p.add_argument("--accel", default="tcg", choices=["tcg", "kvm", "auto"])
    p.add_argument("--forward", type=int, action="append", default=[], help="guest TCP port to reach on 127.0.0.1")
    p.add_argument("--pin", action="store_true", help="every VM: vCPU n on host CPU n, qemu's other threads on host CPU 0")
    p.add_argument("--boot", default="kernel", choices=["kernel", "grub"],
                   help="grub: the VM boots through its own GRUB after its first start (amd64; kernel command line tests)")
    p.add_argument("--boot-timeout", type=float, default=300.0)
    p.add_argument("--topology", default=str(topology.DEFAULT))
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="boot only this VM of the topology (repeatable); the others are left as they are")
    p.add_argument("--specs", help="JSON list of VM specs (molecule platforms); other keys are ignored")
    p.add_argument("--format", default="text", choices=["text", "json", "molecule"])
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("down", help="stop VMs (only our own qemu, found by pidfile)")
    p.add_argument("names", nargs="*")
    p.add_argument("--all", action="store_true")
    p.set_defaults(func=cmd_down)

    p = sub.add_parser("status", help="list running lab VMs")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("inventory", help="write an Ansible inventory (JSON) of the running VMs")
    p.add_argument("--topology", default=str(topology.DEFAULT))
    p.add_argument("--output")
    p.set_defaults(func=cmd_inventory)

    p = sub.add_parser("threads", help="a VM's qemu threads: names, CPU seconds, pinning (JSON)")
    p.add_argument("name")
    p.set_defaults(func=cmd_threads)

    p = sub.add_parser("ssh", help="run a command on a VM")
    p.add_argument("name")
    p.add_argument("--user", default="root")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_ssh)
    return top


NEEDS_TOOLS = ("image", "up")


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.command in NEEDS_TOOLS and not preflight.check(_log):
        return 1
    try:
        return args.func(args)
    except (vm.LabError, ValueError, RuntimeError, subprocess.CalledProcessError) as exc:
        _log(f"lab: error: {exc}")
        return 1
