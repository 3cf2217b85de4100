"""Where the `mlirgpu` SCons tool is: the installed package's TOOLPATH, else this checkout's site_scons."""
import os
import sys

try:
    import mlirgpu
except ImportError:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "..", "site_scons"))
    import mlirgpu

TOOLPATH = [mlirgpu.TOOLPATH]
