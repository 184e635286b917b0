"""Open-loop streamed completions through one address while a rollout runs; each request classified.

Usage: python load.py --base-url URL --model NAME --api-key KEY --tokens N --stop-file PATH
                      (--interval S | --calibrate N --share F | --streams N) [--max-seconds S]
                      [--phase-file PATH]
A new request starts every --interval seconds whatever the earlier ones do (open loop: a slow server
does not slow the arrivals), each a streamed completion of --tokens tokens with ignore_eos through the
official openai client, until --stop-file exists.
--streams N: a closed loop instead, N streams each sending its next request when the last one ended, until
--stop-file or --max-seconds (a load that holds N slots busy the whole time).
--calibrate N: first N requests one after the other (phase "calibration"; the front door spreads them over
its instances); the slowest one's time is what the slowest instance's slot takes for a request, so it
serves 1/slowest requests a second, and the open loop then offers --share of that: a load that is the same
share of the service whatever the machine's speed that day, and that any one instance can carry alone. Each request is one of:
  completed  - the stream ended with finish_reason "length": every token asked for (ignore_eos);
  truncated  - the stream ended without an error but without reaching the length (what llama-server's
               SIGTERM does). Text chunks are counted too, but a chunk is not a token (llama-server holds
               back an incomplete UTF-8 sequence), so the verdict is the finish reason;
  failed     - the client raised (connection refused or reset, HTTP error, a broken stream).
--phase-file: a file whose text ("steady", "rollout", ...) labels requests started while it holds it, so
time to first token can be compared between phases. Prints one JSON object (summary and every request).
"""

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "agent"))

from cpuinfer_agent.stream_probe import percentile  # noqa: E402  pylint: disable=wrong-import-position


def classify(finish_reason, error):
    if error is not None:
        return "failed"
    return "completed" if finish_reason == "length" else "truncated"


def summarise(requests):
    summary = {"sent": len(requests)}
    for outcome in ("completed", "truncated", "failed"):
        summary[outcome] = sum(1 for r in requests if r["outcome"] == outcome)
    for phase in sorted({r["phase"] for r in requests}):
        ttfts = [r["ttft_s"] for r in requests if r["phase"] == phase and r["ttft_s"] is not None]
        summary["ttft_p99_s_" + phase] = percentile(ttfts, 0.99)
        summary["ttft_p50_s_" + phase] = percentile(ttfts, 0.50)
        summary["sent_" + phase] = sum(1 for r in requests if r["phase"] == phase)
    return summary


def one_request(client, model, tokens, index, phase):
    started = time.monotonic()
    first, seen, error, finish = None, 0, None, None
    try:
        stream = client.completions.create(model=model, prompt="Request %d writes about CPUs:" % index,
                                           max_tokens=tokens, temperature=0, stream=True,
                                           extra_body={"ignore_eos": True})
        for chunk in stream:
            if chunk.choices and chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
            if chunk.choices and chunk.choices[0].text:
                seen += 1
                if first is None:
                    first = time.monotonic() - started
    except Exception as exc:  # every client error is an outcome to count, not a crash
        error = "%s: %s" % (type(exc).__name__, str(exc)[:200])
    return {"index": index, "phase": phase, "chunks": seen, "finish_reason": finish, "ttft_s": first,
            "seconds": time.monotonic() - started, "error": error, "outcome": classify(finish, error)}


def calibrated_interval(calibration, share):
    """Seconds between two arrivals for a load of share x what the slowest slot serves (1 / its request time)."""
    done = [r["seconds"] for r in calibration if r["outcome"] == "completed"]
    if len(done) < len(calibration) or not done:
        raise SystemExit("load.py: the calibration requests did not all complete: %s" % [r["error"] for r in calibration])
    return max(done) / share


def read_phase(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or "steady"
    except (OSError, TypeError):
        return "steady"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", default="none")
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--phase-file")
    parser.add_argument("--max-seconds", type=float, default=1800)
    parser.add_argument("--calibrate", type=int, default=0)
    parser.add_argument("--share", type=float, default=0.5)
    parser.add_argument("--streams", type=int)
    args = parser.parse_args()
    # no retries: a retried request would hide the failure this counts
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=600)
    results, threads, lock = [], [], threading.Lock()

    def run(index, phase):
        result = one_request(client, args.model, args.tokens, index, phase)
        with lock:
            results.append(result)

    calibration = [one_request(client, args.model, args.tokens, index, "calibration") for index in range(args.calibrate)]
    interval = calibrated_interval(calibration, args.share) if calibration else args.interval
    results.extend(calibration)
    started = time.monotonic()

    def going():
        return not os.path.exists(args.stop_file) and time.monotonic() - started < args.max_seconds

    if args.streams:
        indexes = iter(range(len(calibration), 1 << 30))

        def stream():
            while going():
                run(next(indexes), read_phase(args.phase_file))
        threads = [threading.Thread(target=stream) for dummy in range(args.streams)]
        for thread in threads:
            thread.start()
    index = len(calibration)
    while not args.streams and going():
        thread = threading.Thread(target=run, args=(index, read_phase(args.phase_file)))
        thread.start()
        threads.append(thread)
        index += 1
        time.sleep(interval)
    for thread in threads:
        thread.join()
    results.sort(key=lambda r: r["index"])
    summary = dict(summarise(results), interval_s=round(interval, 3))
    print(json.dumps({"summary": summary, "requests": results}))


if __name__ == "__main__":
    main()
