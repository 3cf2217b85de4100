"""`scons DUMP=1 gpu-artifacts`: the CI manifest, reports and archive (mlirgpu.reports.artifacts) over every
GpuObject and GpuLibrary of the build, one alias made only when asked for."""
import SCons.Action
import SCons.Errors
import SCons.Script

from ...errors import CompileError
from .nodes import top_file, variable_node
from .variables import text


class _ArtifactSet:
    """`scons DUMP=1 gpu-artifacts`: the manifest, reports and archive over every GpuObject and GpuLibrary of
    the build.

    Like SCons's compilation_db tool, the compiles register themselves as they are declared; the alias is made
    by the first one (with that environment's GPU_ARTIFACTSDIR and GPU_BASELINE, from their base: the top folder
    when given on the command line, nodes.variable_node), and only when asked for on the command line, so
    ordinary builds never make or need it.
    """

    def __init__(self):
        self.records = []
        self.targets = None
        self.baseline = None

    def add(self, env, nodes, record):
        if "gpu-artifacts" not in SCons.Script.COMMAND_LINE_TARGETS:
            return
        if self.targets is None:
            from ...reports import artifacts  # only for this target: it imports what reports need

            folder = variable_node(env, "GPU_ARTIFACTSDIR", text(env, "GPU_ARTIFACTSDIR"), folder=True)
            action = SCons.Action.Action(self._build, self._describe, varlist=["GPU_BASELINE", "GPU_FAIL_ON"])
            self.targets = env.Command([folder.File(name) for name in artifacts.OUTPUTS], [], action)
            baseline = text(env, "GPU_BASELINE")
            if baseline:
                self.baseline = variable_node(env, "GPU_BASELINE", baseline)
                env.Depends(self.targets, self.baseline)
            env.Alias("gpu-artifacts", self.targets)
            self.env = env
        self.records.append(record)
        env.Depends(self.targets, nodes)

    def _build(self, target, source, env):
        from ...reports import artifacts

        toolkit = text(self.env, "GPU_TOOLKIT")
        baseline = self.baseline.abspath if self.baseline else ""
        try:
            trace = text(self.env, "GPU_TRACE")
            broken = artifacts.write_artifacts(
                [record.abspath for record in self.records], target[0].dir.abspath,
                artifacts.toolchain_versions(toolkit), toolkit, baseline,
                text(self.env, "GPU_FAIL_ON"), trace=top_file(self.env, trace).abspath if trace else "")
        except CompileError as exc:
            raise SCons.Errors.BuildError(node=target[0], errstr=str(exc), exitstatus=1) from None
        if broken:
            what = "GPU regressions against the baseline" if baseline else "GPU_FAIL_ON rules broken"
            raise SCons.Errors.BuildError(node=target[0], exitstatus=1, errstr=f"{what}: " + "; ".join(broken))
        return 0

    def _describe(self, target, source, env):
        return f"mlirgpu artifacts ({len(self.records)} compiles) -> {target[0].dir}"


ARTIFACTS = _ArtifactSet()

