"""The unit templates under lab/ and benchmarks/ against the roles' contract (see unit_contract.py).

The main command broke on a fresh machine when llama_server's units moved to DynamicUser=yes and the
demonstration's twin still ran as the static user no role created any more: these tests catch that
class without a VM."""

import re

import pytest

from unit_contract import REPO, render_all, unit_settings, unit_templates, user_problems, users_the_roles_create

RENDERED = render_all()


def test_every_unit_template_is_rendered_by_some_playbook():
    rendered = {r.template for r in RENDERED}
    missing = [str(p.relative_to(REPO)) for p in unit_templates() if p.resolve() not in rendered]
    assert not missing, "unit templates no playbook under lab/ or benchmarks/ renders (so nothing checks them): %s" % missing


def test_the_demonstration_and_the_benchmark_render_the_twin():
    playbooks = {str(r.playbook.relative_to(REPO)) for r in RENDERED if r.template.name == "bench-untuned.service.j2"}
    assert playbooks == {"lab/demo/isolation.yml", "benchmarks/isolation/prepare.yml"}


@pytest.mark.parametrize("rendered", RENDERED, ids=lambda r: "%s-%s" % (r.playbook.relative_to(REPO), r.template.name))
def test_a_unit_runs_as_a_user_a_fresh_host_has(rendered):
    assert user_problems(rendered, users_the_roles_create()) == []


@pytest.mark.parametrize("rendered", RENDERED, ids=lambda r: "%s-%s" % (r.playbook.relative_to(REPO), r.template.name))
def test_every_rendered_unit_is_a_unit_file(rendered):
    sections = unit_settings(rendered.text)
    assert "Unit" in sections or "Slice" in sections, rendered.text
    assert "{{" not in rendered.text and "{%" not in rendered.text


def test_the_roles_create_no_user_since_the_servers_run_with_dynamic_users():
    assert users_the_roles_create() == set()


def test_a_static_user_without_dynamic_user_is_refused():
    """The twin as it was at ae0f88c (User= without DynamicUser=yes): the check must name it."""
    twin = next(r for r in RENDERED if r.template.name == "bench-untuned.service.j2")
    static = type(twin)(template=twin.template, playbook=twin.playbook,
                        text=re.sub(r"(?m)^DynamicUser=yes\n", "", twin.text))
    problems = user_problems(static, users_the_roles_create())
    assert len(problems) == 1
    assert "User=cpuinfer-llm" in problems[0] and "status=217/USER" in problems[0]
    assert "bench-untuned.service.j2" in problems[0]


def test_a_user_a_role_creates_is_accepted():
    twin = next(r for r in RENDERED if r.template.name == "bench-untuned.service.j2")
    static = type(twin)(template=twin.template, playbook=twin.playbook,
                        text=re.sub(r"(?m)^DynamicUser=yes\n", "", twin.text))
    assert user_problems(static, {"cpuinfer-llm"}) == []
