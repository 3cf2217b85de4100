"""Giving the C heap's free pages back to the system (glibc's malloc_trim; elsewhere nothing).

A compile of a file of many modules frees tens of MB (the file's text, its scan, the translation's output), in
pages that freed blocks keep resident: each stage runner forked afterwards would share them, and the compile's
process would hold them while it answers its caller (issue 40: peak memory that does not grow with the number
of modules).
"""
import ctypes


def release_free_memory():
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # no malloc_trim in this C library
        pass
