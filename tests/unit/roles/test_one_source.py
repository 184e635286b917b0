"""One source per value: a role's defaults, its argument specs and its instance defaults say the same.

Where a value must be written twice (ansible-core does not apply a role's spec defaults to its
variables), these tests are what keeps the copies from drifting."""

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(path for path in (REPO / "roles").iterdir() if (path / "meta" / "argument_specs.yml").exists())
# llama_server_instances' options with no default: given by the user (name, model, its sha256, port) or
# derived per host (placement from llama_server_placement)
NO_INSTANCE_DEFAULT = {"name", "model", "model_sha256", "port", "placement"}


def _load(path):
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def spec_defaults(role):
    """(entry point, option, its spec default) for every option with a default."""
    specs = _load(role / "meta" / "argument_specs.yml")["argument_specs"]
    return [(entry, name, option["default"]) for entry, spec in sorted(specs.items())
            for name, option in sorted(spec.get("options", {}).items()) if "default" in option]


def templated(value):
    return isinstance(value, str) and "{{" in value


def drifted_defaults(role):
    """Defaults that a spec gives otherwise; a templated default is documented as what it renders to."""
    defaults = _load(role / "defaults" / "main.yml") if (role / "defaults" / "main.yml").exists() else {}
    return ["%s: %s is %r in defaults/main.yml, %r in the spec" % (entry, name, defaults[name], value)
            for entry, name, value in spec_defaults(role)
            if name in defaults and not templated(defaults[name]) and defaults[name] != value]


def drifted_instance_defaults(spec_options, instance_defaults):
    spec = {name: option["default"] for name, option in spec_options.items() if "default" in option}
    problems = ["%s: %r in vars/main.yml, %r in the spec" % (name, instance_defaults[name], spec[name])
                for name in sorted(set(spec) & set(instance_defaults)) if spec[name] != instance_defaults[name]]
    problems += ["%s: in vars/main.yml, not in the spec's defaults" % name
                 for name in sorted(set(instance_defaults) - set(spec))]
    problems += ["%s: no default in the spec" % name
                 for name in sorted(set(spec_options) - set(spec) - NO_INSTANCE_DEFAULT)]
    problems += ["%s: a default in the spec, not in vars/main.yml" % name for name in sorted(set(spec) - set(instance_defaults))]
    return problems


@pytest.mark.parametrize("role", ROLES, ids=[role.name for role in ROLES])
def test_a_roles_defaults_are_its_specs_defaults(role):
    assert drifted_defaults(role) == []


def llama_server_instances():
    spec = _load(REPO / "roles" / "llama_server" / "meta" / "argument_specs.yml")["argument_specs"]["main"]
    defaults = _load(REPO / "roles" / "llama_server" / "vars" / "main.yml")["__llama_server_instance_defaults"]
    return spec["options"]["llama_server_instances"]["options"], defaults


def test_the_instance_defaults_are_the_specs_suboption_defaults():
    assert drifted_instance_defaults(*llama_server_instances()) == []


def test_a_drifted_default_is_found(tmp_path):
    options, defaults = llama_server_instances()
    assert drifted_instance_defaults(options, dict(defaults, n_ctx=defaults["n_ctx"] * 2)) == [
        "n_ctx: %r in vars/main.yml, %r in the spec" % (defaults["n_ctx"] * 2, defaults["n_ctx"])]
    role = tmp_path / "demo"
    (role / "meta").mkdir(parents=True)
    (role / "defaults").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      demo_version: {type: str, default: '1.0'}\n"
        "  other:\n    options:\n      demo_version: {type: str, default: '1.1'}\n")
    (role / "defaults" / "main.yml").write_text("demo_version: '1.0'\n")
    assert drifted_defaults(role) == ["other: demo_version is '1.0' in defaults/main.yml, '1.1' in the spec"]
