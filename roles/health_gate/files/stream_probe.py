"""Measure one streamed completion against a local llama.cpp server: tokens/s and inter-token
latency percentiles. Standard library only, so it runs with the host's own python3.

Usage: python3 stream_probe.py PORT MAX_TOKENS [API_KEY]
Prints JSON {"tokens", "first_token_ms", "total_ms", "tokens_per_second", "decode_tokens_per_second",
"p50_ms", "p99_ms", "gaps_ms"}.

tokens_per_second is end to end (tokens over the whole request, first token included). The rate between
the first and the last event is reported too, but not gated on: server-sent events may arrive in
bursts, and a burst makes that span short and the rate meaningless.
"""

import json
import sys
import time
import urllib.request


def percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def token_arrivals(port, body, api_key="", timeout=600):
    """POST a streamed completion to 127.0.0.1:PORT; (started, [arrival of each event carrying text],
    finished), monotonic seconds. Events without text (llama-server's closing chunk with the finish
    reason) are no tokens."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=json.dumps(body).encode(),
                                     headers=headers)
    started = time.monotonic()
    arrivals = []
    with urllib.request.urlopen(request, timeout=timeout) as response:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data:") and line != "data: [DONE]":
                if any(choice.get("text") for choice in json.loads(line[5:]).get("choices", [])):
                    arrivals.append(time.monotonic())
    return started, arrivals, time.monotonic()


def measure(port, max_tokens, api_key=""):
    """One streamed completion on 127.0.0.1:PORT, measured (a dict, see the module's docstring)."""
    started, arrivals, finished = token_arrivals(port, {
        "prompt": "Health check of the inference service:", "max_tokens": max_tokens, "stream": True,
        "temperature": 0}, api_key)
    gaps = [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])]
    span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else 0.0
    return {
        "tokens": len(arrivals),
        "first_token_ms": round((arrivals[0] - started) * 1000, 1) if arrivals else None,
        "total_ms": round((finished - started) * 1000, 1),
        "tokens_per_second": round(len(arrivals) / (finished - started), 3),
        "decode_tokens_per_second": round((len(arrivals) - 1) / span, 3) if span else 0.0,
        "p50_ms": round(percentile(gaps, 0.50), 1),
        "p99_ms": round(percentile(gaps, 0.99), 1),
        "gaps_ms": [round(g, 1) for g in gaps],
    }


def main():
    api_key = sys.argv[3] if len(sys.argv) > 3 else ""
    print(json.dumps(measure(int(sys.argv[1]), int(sys.argv[2]), api_key)))


if __name__ == "__main__":
    main()
