"""Giving the C heap's free pages back to the system after a big compile (glibc's malloc_trim, and a fixed trim
threshold; elsewhere nothing), and importing without the cyclic collector.

A compile of a file of many modules frees tens of MB (the file's text, its scan, the translation's output), in
pages that freed blocks keep resident: each stage runner forked afterwards would share them, and the compile's
process would hold them while it answers its caller (issue 40: peak memory that does not grow with the number
of modules).
"""
import contextlib
import ctypes
import gc
import os


_M_TRIM_THRESHOLD = -1  # mallopt's parameter (malloc.h)
TRIM_THRESHOLD = 128 << 10  # glibc's default, which it otherwise raises as the process frees big blocks


def trim_freed_tops():
    """Have `free` give a heap's free top back to the system above TRIM_THRESHOLD, fixed. glibc raises the
    threshold to twice the biggest mmapped block freed so far (a 6.5 MB source's text: 13 MB), and malloc_trim
    never trims the heaps of threads' arenas, where a tool's output is read (mlirgpu.llvm.process.run_all reads
    each run's on a thread): a worker that translated 10,000 modules kept their outputs' 2 x 9.3 MiB there,
    free but resident, while its stage runners worked (issue 40). Fixing it also fixes the mmap threshold
    where it stands (big blocks are mapped, and unmapped when freed, as at start-up)."""
    try:
        ctypes.CDLL(None).mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    except (OSError, AttributeError):  # no mallopt in this C library
        pass


# A source from this size on is a big compile's (a file of thousands of modules, a 48 MiB blob): its process
# fixes the trim threshold before the compile and gives the freed heap back after it. A smaller one does
# neither: each trim was a thousand page faults of the next compile's (2-3 ms of a 30 ms compile's CPU in the
# kernel, measured), for memory that compile takes again at once.
LARGE_SOURCE_BYTES = 1 << 20


def large_source(path):
    """Whether the compile of the file at `path` is a big one (LARGE_SOURCE_BYTES); False when it cannot be
    read (the compile says why)."""
    try:
        return os.path.getsize(path) >= LARGE_SOURCE_BYTES
    except (OSError, TypeError, ValueError):
        return False


def release_free_memory():
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # no malloc_trim in this C library
        pass


def keep_booted():
    """Move every object alive now to the collector's permanent generation (gc.freeze): what a process imported
    as it booted lives as long as it does. Imported without the collector (no_collection), those objects all
    wait in the youngest generation, and the first collection after the boot walked every one of them (6-22 ms
    of a build's zygote, just before it forked the first worker that the build's compiles wait for); the
    processes forked afterwards no longer write their pages for collections either, as Python's documentation
    advises before a fork."""
    gc.freeze()


@contextlib.contextmanager
def no_collection():
    """Run the block with the cyclic collector off (then back as it was): importing the pipeline creates tens of
    thousands of objects, none of them garbage, and the collections they trigger are a sixth of the import's
    time (measured: 197 against 163 ms for the command line and the pipeline), paid by every command, worker
    and zygote that starts."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
