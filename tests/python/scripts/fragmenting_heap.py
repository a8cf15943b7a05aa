"""A program that fragments glibc's heap by itself, as torch's tensors can (docs/collection.md §Memory).

Each step takes a 25 MiB block with posix_memalign (as torch's CPU allocator does), touches it, keeps a
small block allocated right after it, and frees the previous step's big block. The freed hole cannot
coalesce (a kept small block on each side) and is a few bytes too small for the next posix_memalign of
the same size, so every step takes fresh memory at the top of the heap: the plain program's resident
size grows by 25 MiB per step. Only ctypes calls run in the loop, so instrumentation changes nothing in
the pattern. Prints the resident size in MB after every step, at the end (`rss <MB>` lines).
"""

import array
import ctypes
import os
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
BLOCK = 25 << 20
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
M_MMAP_THRESHOLD = -3


def resident_mb() -> int:
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 128).split()[1]) * PAGE // (1 << 20)
    finally:
        os.close(fd)


def aligned_block() -> int:
    p = ctypes.c_void_p()
    if libc.posix_memalign(ctypes.byref(p), 64, BLOCK) != 0:
        raise MemoryError
    libc.memset(p, 1, BLOCK)
    return p.value


def main(steps: int) -> None:
    # What glibc does by itself after the first large free (its threshold rises to that block's size),
    # made explicit so the run does not depend on which blocks the interpreter freed before.
    libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
    rss = array.array("q", [0] * steps)
    pins = [libc.malloc(40)]
    previous = None
    for i in range(steps):
        block = aligned_block()
        pins.append(libc.malloc(40))  # right after the block, at the top of the heap, and kept
        if previous is not None:
            libc.free(previous)
        previous = block
        rss[i] = resident_mb()
        time.sleep(0.01)  # a training step takes time: the recorder's writer polls every 20 ms
    print("\n".join(f"rss {mb}" for mb in rss), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
