"""A systemctl that keeps units in a dict: what show, daemon-reload, enable, disable, start, stop and restart do
to them, every call recorded, and one call that can be made to fail."""

UNLOADED = {"active": "inactive", "file": ""}


class FakeSystemd:
    def __init__(self, units=None, fail=None):
        self.units = dict((name, dict(state)) for name, state in (units or {}).items())
        self.calls = []
        self.fail = fail  # an argv (without "systemctl") that exits 1

    def changes(self):
        """The calls that change something (show left out), without 'systemctl'."""
        return [argv[1:] for argv in self.calls if argv[1] != "show"]

    def __call__(self, argv, **kwargs):
        self.calls.append(list(argv))
        assert argv[0] == "systemctl", argv
        words = list(argv[1:])
        if words == self.fail:
            return 1, "", "Job for %s failed." % words[-1]
        if words[0] == "show":
            names = words[words.index("--") + 1:]
            return 0, "\n\n".join(self._show(name) for name in names) + "\n", ""
        if words == ["daemon-reload"]:
            return 0, "", ""
        verb, name = words
        state = self.units.setdefault(name, dict(UNLOADED))
        if verb in ("start", "restart"):
            state["active"] = "active"
        elif verb == "stop":
            state["active"] = "inactive"
        elif verb == "enable":
            state["file"] = "enabled"
        elif verb == "disable":
            state["file"] = "disabled"
        else:
            raise AssertionError("unexpected systemctl %s" % words)
        return 0, "", ""

    def _show(self, name):
        state = self.units.get(name, UNLOADED)
        return "Id=%s\nActiveState=%s\nUnitFileState=%s" % (name, state["active"], state["file"])
