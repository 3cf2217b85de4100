"""The package's version (part of every signature and record: a new version rebuilds), and the folders of its
code, which the compile server's and the Dask workers' fingerprints are made of."""
import os

__version__ = "0.1.0"
PACKAGE = os.path.dirname(os.path.abspath(__file__))


def code_folders(root=PACKAGE):
    """Every folder of the package that holds Python code, the package itself first, then every subpackage at
    any depth in sorted order: an edit in any of them changes both fingerprints."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(name for name in dirs if name != "__pycache__" and not name.startswith("."))
        if any(name.endswith(".py") for name in names):
            found.append(folder)
    return found
