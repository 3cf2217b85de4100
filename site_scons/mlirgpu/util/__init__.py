"""Helpers every layer uses: reading MLIR text, names, atomic writes, option tokenizing, traces."""
