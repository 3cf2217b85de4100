"""A plugin target written against the hooks' old home (methods on the Target) is refused when it registers,
naming the role the hook belongs to, instead of compiling with the built-in hook silently in its place."""
import pytest

from mlirgpu import targets
from mlirgpu.targets import nvvm, roles


class _OldStyle(nvvm.NVVM):
    name = "old-style"

    def serialize(self, job, assembly, options, scratch):  # the 0.1 name of Codegen.module_to_object
        return b""


class _Unknown(nvvm.NVVM):
    name = "unknown-hook"

    def frobnicate(self):
        return None


class _RoleStyle(nvvm.NVVM):
    name = "role-style"

    class Codegen(nvvm.NVVMCodegen):
        def module_to_object(self, job, assembly, options, scratch):
            return b""


def test_a_hook_defined_on_the_target_is_refused_with_its_role():
    with pytest.raises(TypeError) as refused:
        targets.register(_OldStyle())
    message = str(refused.value)
    assert "'old-style'" in message and "serialize()" in message
    assert "module_to_object() in a subclass of mlirgpu.targets.roles.Codegen" in message
    assert hasattr(roles.Codegen, "module_to_object")
    assert "old-style" not in targets.TARGETS


def test_a_method_no_role_knows_is_refused_too():
    with pytest.raises(TypeError, match=r"frobnicate\(\) on the Target itself.*hooks live on the roles"):
        targets.register(_Unknown())


def test_a_target_with_role_classes_registers():
    target = _RoleStyle()
    try:
        targets.register(target)
        assert targets.TARGETS["role-style"] is target and target.codegen.module_to_object(None, "", None, "") == b""
    finally:
        targets.TARGETS.pop("role-style", None)
        targets.REGISTERED.discard("role-style")
