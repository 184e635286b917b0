"""What an engine's own server serves, as clients get it: streamed completions of one shape (a prompt of
PROMPT tokens, GENERATED generated), first one after another, then STREAMS at once. Standard library only.

Usage: cpuinfer-served-rate [--requests N] [--streams S] [--prompt P] [--generated G] PORT -- SERVER ARGV...
Starts SERVER ARGV (a llama.cpp-family server listening on 127.0.0.1:PORT, no API key; with PORT 0 a free
port is chosen and put in place of every "{port}" in the argv), waits for its /health, warms it up with one
request, measures, stops it. Run it under the CPUs the instance gets (systemd-run -p AllowedCPUs=...): the
server inherits them. A server that dies is reported with the end of what it wrote.
Prints JSON {"1": {"prefill", "decode"}, "S": {"prefill", "decode"}, "requests"}: medians in tokens/s.

Prefill = prompt tokens / time to the first token (at S streams: of all streams, to the last first token);
decode = tokens after the first / time from the first token to the last (at S streams: the tokens of all
streams after the last first token / the time from it to the last token - while every stream decodes; a span
from the first first token would count a later prompt's prefill as decode time).
Prompts are token ids drawn from the model's own tokenization of random words (/tokenize: every id is
in its vocabulary), different for every request, so no prompt cache helps; prompt caching stays at the
engine's default, as clients leave it.
"""

import argparse
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from cpuinfer_agent import stream_probe


def health(port):
    """/health's status, None when nothing answers."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


class Server:
    """A server process for the duration of a with block, ready (/health 200) when entered."""

    def __init__(self, argv, port, cwd=None, ready_s=600):
        self.argv, self.port, self.cwd, self.ready_s, self.process = [str(a) for a in argv], port, cwd, ready_s, None

    def __enter__(self):
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.cwd)
        deadline = time.monotonic() + self.ready_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError("the server exited with %s before it was ready: %s" % (self.process.returncode, self.tail()))
            if health(self.port) == 200:
                return self
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError("no /health 200 from the server in %d s" % self.ready_s)

    def alive(self):
        return self.process.poll() is None

    def tail(self, size=1500):
        """The end of what the server wrote."""
        self.log.seek(0, 2)
        self.log.seek(max(self.log.tell() - size, 0))
        return self.log.read().decode(errors="replace")

    def __exit__(self, *exc):
        # a server that died while measured (a request failed: give a dying one a moment to be gone): what it
        # wrote last, for the report
        if exc and exc[0] is not None:
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        self.died = self.process.poll() is not None
        self.last_words = self.tail() if self.died else ""
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def free_port():
    """A loopback port nothing listens on now (and no connection of a server just stopped holds: ik_llama.cpp's
    server cannot bind beside those)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def vocabulary_ids(port, words=3000, seed=0):
    """Token ids of the model's own tokenization of random words: ids its vocabulary certainly has."""
    rng = random.Random("words %d" % seed)
    text = " ".join("".join(rng.choice("etaoinshrdlucmfw") for dummy_letter in range(rng.randrange(2, 8)))
                    for dummy_word in range(words))
    request = urllib.request.Request("http://127.0.0.1:%d/tokenize" % port, data=json.dumps({"content": text}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        ids = sorted(set(json.load(response)["tokens"]))
    if len(ids) < 16:
        raise RuntimeError("the model's tokenizer gave %d distinct ids for random words" % len(ids))
    return ids


def prompt_ids(seed, tokens, vocabulary=None):
    """Token ids, different for every seed (an int seed would give -1 and 1 the same ids: a warm-up would fill
    the prompt cache for a measured request): drawn from vocabulary (ids the model has), else past the
    specials and byte tokens of common vocabularies of 8000 tokens or more."""
    rng = random.Random("prompt %d" % seed)
    if vocabulary:
        return [rng.choice(vocabulary) for dummy_index in range(tokens)]
    return [rng.randrange(300, 8000) for dummy_index in range(tokens)]


def completion(port, seed, prompt, generated, vocabulary=None):
    """One streamed request: (started, [arrival of each token], finished)."""
    return stream_probe.token_arrivals(port, {"prompt": prompt_ids(seed, prompt, vocabulary), "max_tokens": generated,
                                              "stream": True, "temperature": 0, "ignore_eos": True}, timeout=1800)


def rates(requests, prompt):
    """Prefill and decode of requests started together (one or several), as the module says."""
    start = min(started for started, arrivals, finished in requests)
    firsts = [arrivals[0] for started, arrivals, finished in requests]
    all_decoding = max(firsts)
    last = max(arrivals[-1] for started, arrivals, finished in requests)
    decoded = sum(1 for started, arrivals, finished in requests for arrival in arrivals[1:] if arrival > all_decoding)
    return {"prefill": round(len(requests) * prompt / (all_decoding - start), 2),
            "decode": round(decoded / (last - all_decoding), 2) if last > all_decoding else 0.0,
            # requests started together whose first tokens came apart were not prefilled in one batch
            "first_spread": round(max(firsts) - min(firsts), 3)}


def at_once(port, streams, seed, prompt, generated, vocabulary=None):
    """streams requests started together: their rates."""
    results = [None] * streams
    barrier = threading.Barrier(streams)

    def one(stream):
        barrier.wait()
        results[stream] = completion(port, seed * 100 + stream, prompt, generated, vocabulary)
    workers = [threading.Thread(target=one, args=(stream,)) for stream in range(streams)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return rates(results, prompt)


def served(port, rounds, requests, streams, prompt, generated, seed=0, vocabulary=None):
    """rounds x (requests one after another, then requests in groups of streams at once): every measurement,
    by stream count."""
    measured = {"1": [], str(streams): []}
    for round_ in range(rounds):
        for index in range(requests):
            one = completion(port, seed + 1000 * round_ + index, prompt, generated, vocabulary)
            measured["1"].append(rates([one], prompt))
        for index in range(max(requests // streams, 1)):
            measured[str(streams)].append(at_once(port, streams, seed + 1000 * round_ + 500 + index, prompt, generated,
                                                  vocabulary))
    return measured


def medians(measured):
    return {streams: {rate: round(statistics.median(m[rate] for m in ms), 2) for rate in ("prefill", "decode")}
            for streams, ms in measured.items()}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        sys.stderr.write("cpuinfer-served-rate: give the server's argv after --\n")
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="cpuinfer-served-rate")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--generated", type=int, default=64)
    parser.add_argument("port", type=int)
    args = parser.parse_args(argv[:split])
    port = args.port or free_port()
    server_argv = [word.replace("{port}", str(port)) for word in argv[split + 1:]]
    server = None
    try:
        # ik_llama.cpp's server writes llama.log into its working directory
        with tempfile.TemporaryDirectory(prefix="served-rate-") as workdir, Server(server_argv, port, workdir) as server:
            vocabulary = vocabulary_ids(port)
            completion(port, -1, args.prompt, args.generated, vocabulary)  # warm-up: the model's pages in
            measured = served(port, 1, args.requests, args.streams, args.prompt, args.generated, vocabulary=vocabulary)
    except (RuntimeError, OSError, ValueError, urllib.error.URLError) as exc:
        died = " (the server died; its last words: %s)" % server.last_words if server is not None and server.died else ""
        sys.stderr.write("cpuinfer-served-rate: %s%s\n" % (exc, died))
        return 1
    print(json.dumps(dict(medians(measured), requests=args.requests)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
