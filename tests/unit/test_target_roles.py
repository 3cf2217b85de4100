"""A target is its identity and one object per role (mlirgpu.targets.roles), and every consumer reaches a
target through the roles it needs: the table below says which module uses which, so a new use of a role (a
consumer growing into another kind of consumer) is a visible change here, and a hook asked of the target
itself or of the wrong role, which would fail only on the path that reaches it, fails this test."""
import ast
import os

from corpusutil import ROOT
from mlirgpu.targets import BUILT_IN, roles
from mlirgpu.targets.base import Target

PACKAGE = os.path.join(ROOT, "site_scons", "mlirgpu")
ROLES = {"checks": roles.Checks, "lowering": roles.Lowering, "codegen": roles.Codegen, "outputs": roles.Outputs,
         "toolchain": roles.Toolchain}
HOOKS = {role: {name for name in dir(cls) if not name.startswith("_") and name != "target"}
         for role, cls in ROLES.items()}
IDENTITY = {"name", "attribute", "default_triple", "default_chip", "default_opt_level"}

# Each module outside mlirgpu.targets that calls a target's hooks, and the roles it calls them on.
USES = {
    "execution/dask.py": {"toolchain"},
    "execution/dask_fingerprint.py": {"toolchain"},
    "execution/pool.py": {"codegen"},
    "pipeline/compileentry.py": {"toolchain"},
    "pipeline/compileresult.py": {"codegen", "toolchain"},
    "pipeline/driver.py": {"codegen", "outputs"},
    "pipeline/embed.py": {"outputs"},
    "pipeline/hostobject.py": {"outputs"},
    "pipeline/gpubinary.py": {"outputs"},
    "pipeline/library.py": {"codegen"},
    "pipeline/lowering.py": {"checks", "lowering"},
    "pipeline/pipelinefixes.py": {"lowering"},
    "pipeline/planning.py": {"checks", "lowering", "outputs", "toolchain"},
    "pipeline/record.py": {"codegen"},
    "pipeline/repro.py": {"codegen", "outputs"},
    "pipeline/scan.py": {"checks", "codegen", "toolchain"},
    "pipeline/source.py": {"checks", "lowering"},
    "pipeline/stagerunner.py": {"codegen"},
    "pipeline/stages.py": {"codegen", "outputs", "toolchain"},
    "pipeline/substitute.py": {"codegen", "outputs"},
    "reports/manifest.py": {"outputs"},
}


def _modules(folder=PACKAGE):
    for where, _dirs, files in os.walk(folder):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(where, name)
                with open(path, encoding="utf-8") as handle:
                    yield os.path.relpath(path, PACKAGE).replace(os.sep, "/"), ast.parse(handle.read())


def _names_a_target(node):
    """Whether an expression is a target as consumers name one: `target`, `job.target`, `TARGETS[...]`."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id == "TARGETS"
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name == "target" or name.endswith("_target")


def _role_uses(tree):
    """(roles the module calls hooks on, [problems]: a hook of one role asked of another, or of a target)."""
    used, problems = set(), []
    every_hook = set().union(*HOOKS.values())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr in ROLES and node.attr in HOOKS[value.attr]:
            used.add(value.attr)  # `targets.pop().outputs.fat_container` too (`options.lowering` is a string)
        elif isinstance(value, ast.Attribute) and value.attr in ROLES and _names_a_target(value.value):
            problems.append(f"line {node.lineno}: {ast.unparse(node)} is no hook of the {value.attr} role")
        elif node.attr in every_hook and _names_a_target(value):
            problems.append(f"line {node.lineno}: {ast.unparse(node)} asks the target, not its role")
    return used, problems


def test_each_consumer_uses_the_roles_its_table_names():
    found, problems = {}, []
    for module, tree in _modules():
        if module.startswith("targets/"):
            continue
        used, wrong = _role_uses(tree)
        problems += [f"{module}: {problem}" for problem in wrong]
        if used:
            found[module] = used
    assert problems == []
    assert found == USES


def test_a_target_is_its_identity_and_one_object_per_role():
    classes = {role.capitalize(): cls for role, cls in ROLES.items()}
    assert {name for name in dir(Target) if not name.startswith("_")} == IDENTITY | set(classes)
    for target in BUILT_IN:
        assert set(vars(target)) == set(ROLES), type(target).__name__
        for role, default in ROLES.items():
            mine = getattr(target, role)
            assert isinstance(mine, default) and mine.target is target, (type(target).__name__, role)


def test_the_targets_own_modules_ask_each_role_for_its_own_hooks():
    """Inside mlirgpu.targets a role reaches another through `self.target.<role>` (NVVM's serializer asks its
    toolchain for the toolkit); a hook asked of the wrong role would fail only when that path runs."""
    problems = []
    for module, tree in _modules(os.path.join(PACKAGE, "targets")):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and \
                    node.value.attr in ROLES and node.attr not in HOOKS[node.value.attr]:
                problems.append(f"targets/{module}:{node.lineno}: {ast.unparse(node)}")
    assert problems == []
