"""Memory bandwidth by STREAM's Copy (bytes read + bytes written per second), standard library only.

One process per CPU this program may run on (run it under the instance's CPUs) copies its own buffer
far larger than the caches; all start each pass together and the pass lasts until the last one ends.
The best pass is reported: the bound memory puts on decoding, which reads every active weight once a
token (tokens/s <= bytes/s / bytes per token).

Usage: cpuinfer-copy-bandwidth [MIB_PER_PROCESS] [PASSES]
Prints JSON {"bytes_per_second", "processes", "mib_per_process", "passes"}.
"""

import json
import multiprocessing
import os
import sys
import time


def _copier(size, passes, start, done, elapsed):
    source, target = bytearray(b"\x01") * size, bytearray(size)
    for index in range(passes):
        start.wait()
        began = time.perf_counter()
        target[:] = source
        done.wait()
        if elapsed is not None:
            elapsed[index] = time.perf_counter() - began


def measure(mib=256, passes=5, processes=None):
    processes = processes or len(os.sched_getaffinity(0))
    size = mib << 20
    context = multiprocessing.get_context("fork")
    start, done = context.Barrier(processes), context.Barrier(processes)
    elapsed = context.Array("d", passes)
    workers = [context.Process(target=_copier, args=(size, passes, start, done, elapsed if index == 0 else None))
               for index in range(processes)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if any(worker.exitcode for worker in workers):
        raise RuntimeError("a copier failed (exit codes %s)" % [w.exitcode for w in workers])
    best = min(elapsed[:])
    return {"bytes_per_second": round(2 * size * processes / best), "processes": processes, "mib_per_process": mib,
            "passes": passes}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    mib = int(argv[0]) if argv else 256
    passes = int(argv[1]) if len(argv) > 1 else 5
    sys.stdout.write(json.dumps(measure(mib, passes)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
