"""Concurrent streaming clients against local inference servers, interleaved, measured per stream.

Runs where the servers run (the controller, or inside a lab VM against its own loopback), beside the
host agent's stream_probe.py (standard library only, so a VM's python3 runs both as they are).

Usage: python3 load.py CONFIG_JSON
CONFIG: {"servers": {"LABEL": PORT, ...}, "clients": [1, 2, 4, 8], "rounds": 3, "tokens": 32, "api_key": ""}
Prints JSON {"trials": [{"round", "server", "clients", "streams": [{"start", "first_token", "end", "tokens",
"gaps_ms"}]}]}. Every round runs every client count against every server, one trial at a time, so
slow drift of the machine hits every variant alike.
"""

import json
import sys
import threading

import stream_probe


def stream(port, tokens, api_key, index, barrier):
    barrier.wait()
    started, arrivals, finished = stream_probe.token_arrivals(port, {
        "prompt": "Client %d writes about CPUs:" % index, "max_tokens": tokens, "stream": True, "temperature": 0,
        "ignore_eos": True}, api_key, timeout=1800)
    return {"start": started, "first_token": arrivals[0] if arrivals else None, "end": finished,
            "tokens": len(arrivals), "gaps_ms": [round((b - a) * 1000, 2) for a, b in zip(arrivals, arrivals[1:])]}


def trial(port, clients, tokens, api_key):
    barrier = threading.Barrier(clients)
    results = [None] * clients

    def run(index):
        results[index] = stream(port, tokens, api_key, index, barrier)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    trials = []
    for round_ in range(config["rounds"]):
        for clients in config["clients"]:
            for label, port in sorted(config["servers"].items()):
                streams = trial(port, clients, config["tokens"], config.get("api_key", ""))
                trials.append({"round": round_, "server": label, "clients": clients, "streams": streams})
                sys.stderr.write("round %d, %s, %d clients: %d tokens in %.1f s\n" % (
                    round_, label, clients, sum(s["tokens"] for s in streams),
                    max(s["end"] for s in streams) - min(s["start"] for s in streams)))
    print(json.dumps({"trials": trials}))


if __name__ == "__main__":
    main()
