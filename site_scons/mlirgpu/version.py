"""The package's version (part of every signature and record: a new version rebuilds)."""
__version__ = "0.1.0"
