import shutil

import pytest

from cpuinfer_lab import image, paths


@pytest.fixture
def recipe(tmp_path, monkeypatch):
    copy = tmp_path / "recipe"
    shutil.copytree(paths.RECIPE_DIR, copy)
    monkeypatch.setattr(paths, "RECIPE_DIR", copy)
    return copy


def test_recipe_change_changes_the_key(recipe):
    before = image.recipe_key("amd64")
    assert image.recipe_key("amd64") == before
    (recipe / "packages-common.txt").write_text("systemd\nvim\n")
    assert image.recipe_key("amd64") != before


def test_architectures_have_their_own_keys(recipe):
    assert image.recipe_key("amd64") != image.recipe_key("arm64")


def test_packages_skip_comments_and_add_the_arch_kernel(recipe):
    (recipe / "packages-common.txt").write_text("# comment\nsystemd  # init\n\npython3\n")
    assert image.packages("arm64") == ["systemd", "python3", "linux-image-cloud-arm64"]


def test_unknown_architecture_is_refused(lab_state):
    with pytest.raises(ValueError, match="riscv64"):
        image.image_for("riscv64")


def test_build_argv_keeps_host_writes_out(recipe, tmp_path):
    argv = image._mmdebstrap_argv("amd64", tmp_path)
    assert "--mode=unshare" in argv
    assert "--variant=minbase" in argv
    assert any(a.startswith("--include=") and "linux-image-cloud-amd64" in a for a in argv)


def test_check_says_whether_a_build_is_due_and_builds_nothing(lab_state, monkeypatch):
    from cpuinfer_lab import cli, preflight

    monkeypatch.setattr(preflight, "missing", lambda: [])
    monkeypatch.setattr(image, "build", lambda *a, **k: pytest.fail("an image was built"))
    assert cli.main(["image", "--check", "--arch", "arm64"]) == 3
    cached = image.image_for("arm64")
    cached.directory.mkdir(parents=True)
    (cached.directory / "ready").write_text("now\n")
    assert cli.main(["image", "--check", "--arch", "arm64"]) == 0
    assert cli.main(["image", "--check", "--arch", "all"]) == 3
