"""The SCons tool `mlirgpu` in parts (tool.py has `generate`/`exists`; the package itself is the tool)."""
