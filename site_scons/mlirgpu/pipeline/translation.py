"""How the pipeline gets the LLVM IR of a source's gpu.modules: from a translator, an object with one method.

The pipeline's own (`OWN`) runs mlir-translate on the modules. A caller that translated many sources at once,
ahead of their compiles (mlirgpu.execution.batch), passes a `Translated` one: it gives that translation where it
was made from these very modules, and translates them itself otherwise."""
from ..errors import CompileError
from ..llvm.mlirtools import translate_pieces
from ..llvm.process import ToolTimedOut
from . import source as sources
from .planning import plan
from .scan import pieces_key


class Translator:
    """Translates the modules of one source; the pipeline's own kind."""

    def translate(self, source, modules, warn):
        """{module name: LLVM IR} of `modules`, the pieces cut from `source`, in order; raises CompileError.
        `warn`: the compile's warning sink."""
        return dict(zip((module.name for module in modules),
                        translate_pieces([m.text for m in modules], source, warn)))


OWN = Translator()


class Translated(Translator):
    """A translation made ahead: `given()` gives (pieces key, {module name: LLVM IR}, the warnings its stage cache
    gave) or None, and is called only when the compile translates (a compile whose entry is cached never does)."""

    def __init__(self, given):
        self.given = given

    def translate(self, source, modules, warn):
        entry = self.given()
        if entry:
            for warning in entry[2]:
                warn(warning)
            if entry[0] == pieces_key(modules):
                return entry[1]
        return super().translate(source, modules, warn)


def translate_source(source, loaded, jobs, options, translator, warn):
    """The LLVM IR of every module: (loaded, jobs, {module: LLVM IR}, whether the modules are those given). The
    caller's translator serves modules cut straight from the file (what a caller translates ahead); such a module
    that does not translate is read again through mlir-opt, which reports the error at its exact place (or gives
    the modules that translate). `warn`: the compile's warning sink."""
    return translate_with_host(source, loaded, jobs, options, translator, warn, None)[:4]


def translate_with_host(source, loaded, jobs, options, translator, warn, placeholder):
    """translate_source, and the host code's LLVM IR in the same mlir-translate run: `placeholder` (a
    hostplaceholder.Placeholder, or None) is one more piece after the modules (a file with host code is never
    cut straight from its text, so its modules are always translated here). (loaded, jobs, {module: LLVM IR},
    same, the placeholder's LLVM IR or None). Where that run fails the modules are translated alone, as
    without host code, so a module's error is reported as before (and the host code's by its own run later)."""
    direct = loaded.modules[0].direct
    if placeholder is not None and not direct:
        pieces = [module.text for module in loaded.modules] + [placeholder.text]
        try:
            irs = translate_pieces(pieces, source, warn)
        except ToolTimedOut:
            raise
        except CompileError:
            irs = None
        if irs is not None:
            return loaded, jobs, dict(zip((module.name for module in loaded.modules), irs)), True, irs[-1]
    try:
        return (loaded, jobs, (translator if direct else OWN).translate(source, loaded.modules, warn), True,
                None)
    except ToolTimedOut:
        raise  # a hanging mlir-translate would hang again on the normalised modules
    except CompileError:
        if not direct:
            raise
    loaded = sources.load(source, options)
    jobs = plan(loaded.modules, source, options)
    return loaded, jobs, OWN.translate(source, loaded.modules, warn), False, None
