"""The registry of GPU targets: every target difference lives in one module of this package (roles.py lists the
hooks, one class per role; base.py the target that holds them). The CLI's choices, the SCons variable's values,
the dump names, embedding and the reports all come from here; nothing outside this package names a target.

Adding a target: a module with a `Target` subclass and its role classes, and one line in BUILT_IN below. A
project can add its own without touching the package: name modules in `$MLIRGPU_TARGETS` (comma-separated,
importable); each is imported with the registry (in every process of a build, workers included) and calls
`register(...)`.
"""
import importlib

from . import roles
from .base import Target, TargetAttr
from .roles import REGISTERED
from .nvvm import NVVM
from .rocdl import ROCDL
from .xevm import XeVM
from ..util import environment

BUILT_IN = (NVVM(), ROCDL(), XeVM())
TARGETS = {}
PLUGIN_PROBLEMS = []  # modules of $MLIRGPU_TARGETS that could not be loaded (checked before any compile)


def register(target):
    """Make `target` (a Target) available under its name; a name taken by another target is an error."""
    if not isinstance(target, Target) or not target.name:
        raise TypeError("register() takes a Target with a name")
    for problem in _hooks_on_the_target(target):
        raise TypeError(problem)
    if target.name in TARGETS and TARGETS[target.name] is not target:
        raise ValueError(f"a target named {target.name!r} is already registered")
    TARGETS[target.name] = target
    REGISTERED.add(target.name)


_RENAMED = {"pre_link": "handle_module_pre_link", "libraries": "load_bitcode_files", "serialize": "module_to_object"}
_ROLES = ("Checks", "Lowering", "Codegen", "Outputs", "Toolchain")


def _hooks_on_the_target(target):
    """A method a Target subclass defines on itself: nothing calls it (every hook is a role's), so a plugin
    written against the hooks' old home would be silently ignored; each is refused, naming the role it belongs
    to (and its upstream ModuleToObject name where it was renamed)."""
    for klass in type(target).__mro__[:type(target).__mro__.index(Target)]:
        for name, value in vars(klass).items():
            if name.startswith("_") or not callable(value) or isinstance(value, type):
                continue
            hook = _RENAMED.get(name, name)
            role = next((role for role in _ROLES if hasattr(getattr(roles, role), hook)), None)
            where = (f"define {hook}() in a subclass of mlirgpu.targets.roles.{role} and set it as the target's "
                     f"`{role}` class" if role else "hooks live on the roles of mlirgpu.targets.roles "
                     "(Checks, Lowering, Codegen, Outputs, Toolchain)")
            yield (f"target {target.name!r} ({klass.__module__}.{klass.__qualname__}) defines {name}() on the "
                   f"Target itself, where nothing calls it; fix: {where}")


def target_for_attribute(attr_name):
    """The target of an MLIR target attribute (`nvvm.target` -> NVVM; the first registered wins), or None."""
    for target in TARGETS.values():
        if target.attribute == attr_name:
            return target
    return None


for _target in BUILT_IN:
    register(_target)
for _module in environment.value("MLIRGPU_TARGETS"):
    try:
        importlib.import_module(_module)
    except Exception as exc:  # noqa: BLE001 - reported as one line by every front end (planning.check_options)
        PLUGIN_PROBLEMS.append(f"MLIRGPU_TARGETS names '{_module}', which cannot be loaded: "
                               f"{type(exc).__name__}: {exc}")

__all__ = ["TARGETS", "Target", "TargetAttr", "register", "target_for_attribute"]
