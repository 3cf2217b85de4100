"""What a compile gives its caller (`CompileResult`), and what an object's compile (mlirgpu.pipeline.driver) and a
library's (mlirgpu.pipeline.library) both report: the files that shape the outputs, and the warnings about
modules that keep their own targets."""
import os
from dataclasses import dataclass, field

from ..errors import CompileWarning
from ..llvm import backend, process, toolchain


@dataclass
class CompileResult:
    object_bytes: bytes
    jobs: list
    dumps: list  # paths written under the dump folder
    timings: dict = field(default_factory=dict)  # stage -> seconds, summed over jobs
    dependencies: list = field(default_factory=list)  # the source, linked libraries and tools used
    tools: dict = field(default_factory=dict)  # tool name -> [runs, seconds, path]
    binaries: list = field(default_factory=list)  # embed.Embedded, as placed in the object
    header: str = ""  # the C header text for the object
    warnings: list = field(default_factory=list)
    stages: dict = field(default_factory=dict)  # job id -> {stage: "ran" | "cached"} (the stage cache)
    cache_warnings: list = field(default_factory=list)  # the remote cache's faults: said, never the build's failure
    trace: object = field(default_factory=list)  # Chrome trace events (dicts; a compile's: util.trace.Events):
    # the compile and each stage of each job
    llvm_modules: int = 0  # the most LLVM modules the stages held at once, in all processes (at most)


def own_target_warnings(modules, options, source):
    """Modules that keep their own target(s) although the build names another target (which applies only to
    modules without one): the same on every path (direct cut or mlir-opt)."""
    if not options.target:
        return []
    return [CompileWarning(f"gpu.module @{module.name} carries its own target(s); target {options.target} "
                           "applies only to modules without one", file=source, line=module.line)
            for module in modules if module.targets and all(t.target.name != options.target for t in module.targets)]


def compile_dependencies(compile_, jobs, serialized=True):
    """The files besides the source that may shape the outputs: every library the jobs' link stages may read and
    every tool of their targets (`serialized`: a library's compile runs none of its serializer's), besides those
    the stages did read and run (a build tool must rebuild when one changes, whether or not this compile ran it,
    or the stage cache served it: the same list either way)."""
    libraries = set(compile_.dependencies)
    tools = {entry[2] for entry in (process.tool_stats.get() or {}).values()}
    tools.update(toolchain.found(*(lambda name=name: toolchain.llvm_tool(name)
                                   for name in ("mlir-opt", "mlir-translate"))))  # a missing one is no input
    for job in jobs:
        libraries.update(path for path in job.target.codegen.library_inputs(job, compile_.options)
                         if os.path.isfile(path))
        if serialized:
            tools.update(job.target.toolchain.tools(compile_.options))
    if serialized and jobs:
        tools.update(backend.tools())
    return sorted(libraries) + sorted(tools)
