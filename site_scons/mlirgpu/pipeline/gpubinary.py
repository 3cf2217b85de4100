"""The `gpu.binary` op that stands for a gpu.module when host code is translated, as upstream's
`gpu-module-to-binary` leaves it: one `#gpu.object` per job of the module, with the properties its serializer
records. The objects' bytes come from the caller: the jobs' binaries (mlirgpu.pipeline.hostobject), or markers
that stand for them until they exist (mlirgpu.pipeline.hostplaceholder)."""
from ..util.mlirtext import SYMBOL, hex_escaped

# How a `#gpu.object` names its format, per output format (fatbin is the default: unnamed).
_KIND = {"isa": "assembly = ", "bin": "bin = ", "fatbin": ""}
FORMATS = frozenset(_KIND)


def gpu_binary(module, jobs, data_of, options):
    """`gpu.binary @m [#gpu.object<...>, ...]` for `module` and its `jobs`, each object holding `data_of(job)`."""
    kind = _KIND[options.format]
    objects = []
    for job in jobs:
        entries = dict(job.target.outputs.object_properties(job, options.format))
        if options.section:  # upstream 22.1.8 records it for one target only; we honour it for every target
            entries["section"] = f'"{options.section}"'
        properties = ("properties = {" + ", ".join(f"{k} = {v}" for k, v in sorted(entries.items())) + "}, "
                      if entries else "")
        objects.append(f"#gpu.object<{job.attr.text}, {properties}{kind}\"{hex_escaped(data_of(job))}\">")
    symbol = SYMBOL.search(module.text, module.text.index("gpu.module")).group(1)
    handler = f" {module.handler}" if module.handler else ""
    return f"  gpu.binary @{symbol}{handler} [{', '.join(objects)}]\n"


def binary_ops(source, jobs, data_of, options):
    """{module name: its gpu.binary text}, for mlirgpu.pipeline.source.replace_modules."""
    return {module.name: gpu_binary(module, [job for job in jobs if job.module is module], data_of, options)
            for module in source.modules}
