"""The systemd unit templates of lab/ and benchmarks/, rendered with the variables their playbooks pass,
and checked against what the roles create on a host.

Those playbooks sit beside the roles, not in them: when a role's contract changes (a user it no longer
creates, a path), nothing in the role's own tests sees them. Rendering them here is what a fresh host
would do with them, without a VM.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK_TREES = ("lab", "benchmarks")
UNIT_SUFFIXES = (".service", ".slice", ".socket", ".timer", ".mount", ".path", ".target")
TEMPLATE_MODULES = ("ansible.builtin.template", "template")
USER_MODULES = ("ansible.builtin.user", "user", "ansible.builtin.group", "group")
TEMPLATE_LOOKUP = re.compile(r"lookup\(\s*'ansible\.builtin\.template'\s*,\s*(?P<path>[^)]*)\)")
# The users every Debian host has; anything else a unit names must come from a role.
BASE_USERS = {"root"}
# What gather_facts would give on the lab's 2-vCPU host, for the templates that size themselves.
FACTS = {"processor_vcpus": 2, "processor_cores": 2, "architecture": "x86_64"}

_loader = DataLoader()


def load_yaml(path):
    return _loader.load_from_file(str(path), trusted_as_template=True) or {}


@dataclass
class Rendered:
    template: Path          # the .j2 file
    playbook: Path          # the playbook that renders it
    text: str
    variables: dict = field(repr=False, default_factory=dict)

    def where(self):
        return "%s as %s renders it" % (self.template.relative_to(REPO), self.playbook.relative_to(REPO))


def unit_templates():
    """Every systemd unit template under lab/ and benchmarks/."""
    found = []
    for tree in PLAYBOOK_TREES:
        found += [p for p in (REPO / tree).rglob("*.j2") if p.name[:-len(".j2")].endswith(UNIT_SUFFIXES)]
    return sorted(found)


def playbooks():
    for tree in PLAYBOOK_TREES:
        for path in sorted((REPO / tree).rglob("*.yml")):
            if "group_vars" in path.parts or "host_vars" in path.parts:
                continue
            data = load_yaml(path)
            if isinstance(data, list) and all(isinstance(play, dict) for play in data):
                yield path, data


def _tasks(entries):
    for task in entries or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for entry in value.values():
            yield from _strings(entry)
    elif isinstance(value, list):
        for entry in value:
            yield from _strings(entry)


def inventory_of(playbook):
    """The inventory a playbook runs on: its own inventory/ beside it (the benchmarks'), else the lab's."""
    own = playbook.parent / "inventory"
    return own if own.is_dir() else REPO / "inventories" / "lab"


def group_vars(inventory):
    """all.yml first, then the other groups' files: the lab's hosts are in every group that sets something."""
    directory = inventory / "group_vars"
    files = sorted(directory.glob("*.yml"), key=lambda p: (p.name != "all.yml", p.name)) if directory.is_dir() else []
    merged = {}
    for path in files:
        merged.update(load_yaml(path))
    return merged


def role_defaults(role):
    path = REPO / "roles" / role / "defaults" / "main.yml"
    return load_yaml(path) if path.is_file() else {}


def _templar(variables):
    return Templar(loader=_loader, variables=variables)


def resolved(variables):
    """The variables with every value the play could not know here (a registered result, a lookup of a
    build) replaced by a placeholder: the check is about what the templates say, not about those."""
    out = dict(variables)
    for name, value in variables.items():
        try:
            out[name] = _templar(out).template(value)
        except AnsibleError:
            out[name] = "/placeholder/%s" % name
    return out


def facts_the_roles_set():
    """Placeholders for what the roles' set_fact tasks leave on a host for the plays after them (a
    benchmark's second play reads the build directory the role chose): known only on a host."""
    facts = {}
    for path in sorted((REPO / "roles").glob("*/tasks/*.yml")):
        for task in _tasks(load_yaml(path)):
            arguments = task.get("ansible.builtin.set_fact")
            if isinstance(arguments, dict):
                facts.update({name: "/placeholder/%s" % name for name in arguments if name != "cacheable"})
    return facts


def _base_variables(playbook, play):
    inventory = inventory_of(playbook)
    variables = facts_the_roles_set()
    for role in sorted(p.name for p in (REPO / "roles").iterdir() if p.is_dir()):
        variables.update(role_defaults(role))
    variables.update(group_vars(inventory))
    variables.update(play.get("vars") or {})
    variables.update(playbook_dir=str(playbook.parent), inventory_dir=str(inventory),
                     ansible_managed="Ansible managed", ansible_facts=dict(FACTS))
    return variables


def _template_file(playbook, src):
    """Where the template module finds src: the playbook's templates/, then beside the playbook."""
    for candidate in (playbook.parent / "templates" / src, playbook.parent / src):
        if candidate.exists():
            return candidate
    raise FileNotFoundError("%s: template %s not found" % (playbook, src))


def _template_paths(playbook, task, variables):
    """The .j2 files a task renders, with the loop item each is rendered with."""
    items = [None]
    if "loop" in task:
        items = _templar(variables).template(task["loop"])
    for item in items:
        scope = dict(variables, item=item)
        for module in TEMPLATE_MODULES:
            if isinstance(task.get(module), dict) and "src" in task[module]:
                src = _templar(scope).template(task[module]["src"])
                yield item, _template_file(playbook, src)
        for match in (m for text in _strings(task) for m in TEMPLATE_LOOKUP.finditer(text)):
            yield item, Path(_templar(scope).template(trust_as_template("{{ %s }}" % match.group("path"))))


def render_all():
    """Every (template, playbook) pair that the playbooks under lab/ and benchmarks/ render."""
    rendered = []
    for playbook, plays in playbooks():
        for play in plays:
            play_variables = resolved(_base_variables(playbook, play))
            for task in _tasks(play.get("tasks")):
                if not any(".j2" in text for text in _strings(task)):
                    continue
                task_variables = resolved(dict(play_variables, **(task.get("vars") or {})))
                for item, path in _template_paths(playbook, task, task_variables):
                    scope = dict(task_variables, item=item)
                    text = _templar(scope).template(trust_as_template(path.read_text(encoding="utf-8")))
                    rendered.append(Rendered(template=path.resolve(), playbook=playbook, text=text, variables=scope))
    return rendered


def unit_settings(text):
    """A unit file's KEY=VALUE lines by section: {section: {key: [values]}}."""
    sections, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
        elif "=" in line and current is not None:
            key, value = line.split("=", 1)
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


def users_the_roles_create():
    """Users and groups that some role's tasks create (a user or group task whose state is not absent)."""
    created = set()
    for role in sorted(p for p in (REPO / "roles").iterdir() if p.is_dir()):
        defaults = resolved(role_defaults(role.name))
        for path in sorted((role / "tasks").glob("*.yml")):
            for task in _tasks(load_yaml(path)):
                for module in USER_MODULES:
                    arguments = task.get(module)
                    if isinstance(arguments, dict) and arguments.get("state", "present") != "absent":
                        created.add(str(_templar(defaults).template(arguments["name"])))
    return created


def user_problems(rendered, created):
    """What a fresh host would refuse: a User= or Group= that nothing creates, in a unit without
    DynamicUser=yes (systemd then fails the start with status=217/USER)."""
    service = unit_settings(rendered.text).get("Service", {})
    dynamic = any(value.lower() in ("yes", "true", "1", "on") for value in service.get("DynamicUser", []))
    problems = []
    for key in ("User", "Group"):
        for name in service.get(key, []):
            if not dynamic and name not in created | BASE_USERS:
                problems.append(
                    "%s: %s=%s, but no role creates %r (the roles create: %s) and the unit has no DynamicUser=yes; "
                    "a fresh host fails its start with status=217/USER"
                    % (rendered.where(), key, name, name, ", ".join(sorted(created)) or "none"))
    return problems
