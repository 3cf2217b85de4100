"""How the pipeline gets the LLVM IR of a source's gpu.modules: from a translator, an object with one method.

The pipeline's own (`OWN`) runs mlir-translate on the modules. A caller that translated many sources at once,
ahead of their compiles (mlirgpu.execution.batch), passes a `Translated` one: it gives that translation where it
was made from these very modules, and translates them itself otherwise."""
from ..llvm.mlirtools import translate_pieces
from .scan import pieces_key


class Translator:
    """Translates the modules of one source; the pipeline's own kind."""

    def translate(self, source, modules):
        """{module name: LLVM IR} of `modules`, the pieces cut from `source`, in order; raises CompileError."""
        return dict(zip((module.name for module in modules), translate_pieces([m.text for m in modules], source)))


OWN = Translator()


class Translated(Translator):
    """A translation made ahead: `given()` gives (pieces key, {module name: LLVM IR}) or None, and is called only
    when the compile translates (a compile whose entry is cached never does)."""

    def __init__(self, given):
        self.given = given

    def translate(self, source, modules):
        entry = self.given()
        if entry and entry[0] == pieces_key(modules):
            return entry[1]
        return super().translate(source, modules)
