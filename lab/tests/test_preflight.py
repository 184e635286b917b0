"""requirements/debian-packages.txt names every command the controller's code runs.

A fresh machine has only what its image carries; anything else must come from scripts/bootstrap,
which installs from that list. These tests read the code of lab/, scripts/ and benchmarks/ for the
commands it runs (argv lists in Python, command words in the shell scripts) and fail on any that
the list does not name, unless the controller's Python environment provides it.
"""

import ast
import re
from pathlib import Path

import pytest

from cpuinfer_lab import preflight

REPO = Path(__file__).resolve().parents[2]
# Programs that run inside the lab's guests, not on the controller: the image recipe brings what they use.
GUEST_SIDE = {"benchmarks/isolation/guest_runner.py", "benchmarks/slo/slo_runner.py", "benchmarks/nohz/nohz_runner.py",
              "benchmarks/build/generation_rate.py", "benchmarks/build/copy_bandwidth.py"}
SHELL_SCRIPTS = ["scripts/bootstrap", "scripts/lab", "scripts/lab-up", "scripts/test", "benchmarks/run", ".ci/run"]
SHELL_BUILTINS = set("""
    cd echo export set local read return exit source . [[ ]] [ test printf true false shift mapfile declare trap
    wait exec command type unset let eval case esac fi done in for function shopt break continue readonly kill
""".split())
RUNNERS = {"run", "_run", "Popen", "check_call", "check_output", "call", "run_command", "run_as_namespace_root"}


def listed_commands():
    return {command for dummy, commands in preflight.requirements() for command in commands}


def venv_commands():
    """Console scripts of the pinned controller environment (scripts/bootstrap makes .venv)."""
    return {path.name for path in (REPO / ".venv" / "bin").iterdir()} if (REPO / ".venv" / "bin").is_dir() else set()


def python_commands(path):
    """argv[0] of every literal argv list handed to a subprocess-style call, and qemu binaries named in code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.List) and node.args[0].elts:
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            first = node.args[0].elts[0]
            if func in RUNNERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(Path(first.value).name)
        if isinstance(node, ast.FunctionDef) and "argv" in node.name:  # helpers that build an argv to run
            for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return) and isinstance(n.value, ast.List)):
                if ret.value.elts and isinstance(ret.value.elts[0], ast.Constant):
                    found.add(Path(ret.value.elts[0].value).name)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"qemu-system-\w+", node.value):
            found.add(node.value)
    return found


def shell_commands(text):
    """Command words of a bash script: the first word of each simple command, after assignments."""
    text = re.sub(r"<<-?'?(\w+)'?\n.*?\n\1\n", "\n", text, flags=re.S)  # here-documents are text
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))  # comments
    text = re.sub(r"\s#\s.*", "", text)  # trailing comments ("# host's" would open a quote below)
    text = re.sub(r"'[^']*'", "''", text, flags=re.S)  # single-quoted text (python -c code) holds no commands
    text = re.sub(r"\(\([^)]*\)\)", "", text)  # arithmetic
    text = re.sub(r"\b\w+=\([^)]*\)", "", text)  # array assignments
    functions = set(re.findall(r"^\s*([A-Za-z_]\w*)\s*\(\)\s*\{", text, re.M))
    found = set()
    for line in text.splitlines():
        # quoted text is no command; the command substitutions in it are
        line = re.sub(r'"(?:[^"\\]|\\.)*"',
                      lambda m: "; ".join("$(%s)" % inner for inner in re.findall(r"\$\(([^()]*)\)", m.group(0))) or '""',
                      line)
        if re.match(r"^\s*[\w:|*-]+\)\s", line + " "):  # case patterns
            continue
        for segment in re.split(r"\$\(|`|&&|\|\||[;|(){}!]|\b(?:then|do|else|elif|if|while|until)\b", line):
            words = segment.split()
            while words and re.match(r"^[A-Za-z_]\w*(\[[^]]*\])?\+?=", words[0]):
                words = words[1:]
            if words and words[0] in ("exec", "command"):
                words = words[1:]
            word = words[0].strip('"') if words else ""
            if word and word not in SHELL_BUILTINS and word not in functions and re.fullmatch(r"[a-z][\w.+-]*", word):
                found.add(word)
    return found


def controller_code():
    for top in ("lab", "scripts", "benchmarks"):
        for path in sorted((REPO / top).rglob("*.py")):
            relative = str(path.relative_to(REPO))
            if relative not in GUEST_SIDE and "/tests/" not in relative:
                yield relative, python_commands(path)
    for relative in SHELL_SCRIPTS:
        yield relative, shell_commands((REPO / relative).read_text(encoding="utf-8"))


@pytest.mark.parametrize("relative,commands", list(controller_code()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_the_controller_runs_is_listed(relative, commands):
    unknown = commands - listed_commands() - venv_commands()
    assert not unknown, "%s runs %s: add them to requirements/debian-packages.txt" % (relative, sorted(unknown))


def test_the_scanners_see_commands():
    assert shell_commands('# the host\'s\nx=$(cat "$f" | sha256sum)  # it\'s\nif ! dpkg-query -W; then apt-get update; fi\n') == \
        {"cat", "sha256sum", "dpkg-query", "apt-get"}
    assert "mmdebstrap" in python_commands(REPO / "lab" / "cpuinfer_lab" / "image.py")
    assert "qemu-system-aarch64" in python_commands(REPO / "lab" / "cpuinfer_lab" / "vm.py")


def test_arch_test_is_listed_though_mmdebstrap_only_recommends_it():
    assert ("arch-test", ["arch-test"]) in preflight.requirements()


def test_preflight_names_each_missing_command_and_its_package(tmp_path):
    listing = tmp_path / "debian-packages.txt"
    listing.write_text("# header\nqemu-utils   qemu-img   # overlays\nseabios  -\narch-test arch-test\n")
    dpkg = tmp_path / "info"
    dpkg.mkdir()
    absent = preflight.missing(listing, which=lambda command: None if command == "arch-test" else "/usr/bin/x",
                               dpkg_info=dpkg)
    assert absent == ["Debian package seabios", "arch-test (Debian package arch-test)"]
    (dpkg / "seabios.list").write_text("")
    assert preflight.missing(listing, which=lambda command: "/usr/bin/x", dpkg_info=dpkg) == []


def test_cli_stops_before_any_work_when_a_tool_is_missing(monkeypatch, capsys):
    from cpuinfer_lab import cli, image

    monkeypatch.setattr(preflight, "missing", lambda: ["mmdebstrap (Debian package mmdebstrap)"])
    monkeypatch.setattr(image, "build", lambda *a, **k: pytest.fail("work started"))
    assert cli.main(["image", "--arch", "amd64"]) == 1
    assert "mmdebstrap (Debian package mmdebstrap)" in capsys.readouterr().err
