"""Every kernel-interface helper in plugins/module_utils has a test file of its own here, named after it
(test_NAME.py, or test_NAME_helper.py where a module's test already has the name: pytest needs unique
basenames)."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
HELPERS = HERE.parents[3] / "plugins" / "module_utils"


def test_every_helper_has_a_test_file_of_its_own():
    helpers = sorted(p.stem for p in HELPERS.glob("_*.py") if p.stem != "__init__")
    assert len(helpers) > 10
    missing = [name for name in helpers
               if not any((HERE / pattern.format(name)).is_file() for pattern in ("test{}.py", "test{}_helper.py"))]
    assert missing == [], "helpers without tests/unit/plugins/module_utils/test<helper>.py: %s" % ", ".join(missing)
