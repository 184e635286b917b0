"""Drop a file's pages from the page cache before its reader starts (a clean first touch).

A mapped model's pages stay on the NUMA node that first read them (the controller's copy, a checksum
read): an instance that spreads its threads over nodes (llama.cpp --numa distribute) then reads most
weights across the interconnect. Evicted first, each page is read again by the thread that touches it,
onto that thread's node. Pages another running process has mapped stay (the kernel drops only clean,
unmapped ones), so an instance sharing the file keeps its memory.

Usage: cpuinfer-evict-page-cache FILE...   (an instance's ExecStartPre where numa_first_touch is set)
"""

import os
import sys


def evict(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)


def main(argv=None):
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        sys.stderr.write("usage: cpuinfer-evict-page-cache FILE...\n")
        return 2
    for path in paths:
        try:
            evict(path)
        except OSError as exc:
            # a start must not fail for want of a clean first touch: the engine then reads as it would
            sys.stderr.write("%s: not evicted (%s)\n" % (path, exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
