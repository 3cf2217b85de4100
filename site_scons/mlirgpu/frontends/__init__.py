"""The ways into the compiler core: the command line, the Python API and the SCons tool, each a thin adapter."""
