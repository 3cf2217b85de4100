"""The speed machinery behind one door (compiles): worker processes, zygotes, batched translations, fork
servers, Dask."""
