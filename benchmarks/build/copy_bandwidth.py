"""Memory bandwidth by a copy benchmark (STREAM's Copy: bytes read + bytes written per second).

One thread per CPU copies its own pair of arrays far larger than the caches (numpy releases the GIL
while copying); the best of several passes is reported, in bytes/s.
Usage: copy_bandwidth.py [MIB_PER_THREAD] [PASSES]
"""

import json
import os
import sys
import threading
import time

import numpy as np


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    threads = os.cpu_count()
    pairs = [(np.ones(mib << 20, dtype=np.uint8), np.zeros(mib << 20, dtype=np.uint8)) for dummy_thread in range(threads)]
    best = 0.0
    for dummy_pass in range(passes):
        workers = [threading.Thread(target=np.copyto, args=(dst, src)) for src, dst in pairs]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - started
        best = max(best, 2 * threads * (mib << 20) / elapsed)
    print(json.dumps({"threads": threads, "mib_per_thread": mib, "bytes_per_second": round(best)}))


if __name__ == "__main__":
    main()
