"""A fake HAProxy runtime API on a unix socket: `show stat` from a table of servers, `set server B/S state X`
changing it, and a tick (a function of the table) run before every `show stat`, so a test can script how
sessions end and queues grow while a module waits."""

import shutil
import socket
import tempfile
import threading
from pathlib import Path

HEADER = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,status,weight"
STATUS_OF = {"ready": "UP", "drain": "DRAIN", "maint": "MAINT"}


class FakeHAProxy:
    def __init__(self, servers, tick=None, refuse=()):
        """servers: {backend: {server: {status, sessions, queue, slots}}}; a backend's own queue is the
        server named BACKEND (created when missing)."""
        self.servers = servers
        for table in servers.values():
            table.setdefault("BACKEND", {"status": "UP", "sessions": 0, "queue": 0, "slots": None})
        self.tick = tick or (lambda fake: None)
        self.refuse = set(refuse)  # commands answered with an error, as HAProxy answers one it cannot do
        self.commands = []
        self.polls = 0
        # a short path: a unix socket's name is limited to 107 bytes, pytest's tmp_path may be longer
        self.directory = tempfile.mkdtemp(prefix="haproxy-", dir="/tmp")
        self.path = str(Path(self.directory) / "admin.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def status(self, backend, server):
        return self.servers[backend][server]["status"]

    def show_stat(self):
        lines = [HEADER]
        for backend, table in self.servers.items():
            lines.append("fe-%s,FRONTEND,,,0,0,100,0,OPEN," % backend)
            for name, row in table.items():
                if name == "BACKEND":
                    continue
                slots = "" if row["slots"] is None else row["slots"]
                lines.append("%s,%s,%d,0,%d,0,%s,0,%s,1" % (backend, name, row["queue"], row["sessions"], slots, row["status"]))
            own = table["BACKEND"]
            sessions = sum(row["sessions"] for name, row in table.items() if name != "BACKEND")
            lines.append("%s,BACKEND,%d,0,%d,0,10,0,UP,1" % (backend, own["queue"], sessions))
        return "\n".join(lines) + "\n\n"

    def answer(self, text):
        self.commands.append(text)
        words = text.split()
        if text in self.refuse:
            return "Refused by the test.\n"
        if text == "show stat":
            self.polls += 1
            self.tick(self)
            return self.show_stat()
        if words[:2] == ["set", "server"] and len(words) == 5 and words[3] == "state" and words[4] in STATUS_OF:
            backend, server = words[2].split("/", 1) if "/" in words[2] else (words[2], "")
            if server not in self.servers.get(backend, {}):
                return "No such server.\n"
            self.servers[backend][server]["status"] = STATUS_OF[words[4]]
            return "\n"
        return "Unknown command: '%s'\n" % text

    def _serve(self):
        while True:
            try:
                connection = self.listener.accept()[0]
            except OSError:
                return
            with connection:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = connection.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                connection.sendall(self.answer(data.decode().strip()).encode())

    def close(self):
        self.listener.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def server(status="UP", sessions=0, queue=0, slots=1):
    return {"status": status, "sessions": sessions, "queue": queue, "slots": slots}
