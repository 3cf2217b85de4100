"""The set-up only adds: tools/bootstrap installs exactly the missing packages from the machine's own suites when
they have them, adds Debian 13 only for a package no configured suite has, and refuses (installing nothing) when
apt's simulation would upgrade or remove an installed package. The script runs against shims of apt-get,
apt-cache and dpkg-query that log what they are asked, answering with recorded apt output (the decisions on that
output alone: tests/unit/test_apt_plan.py)."""
import os
import shutil
import subprocess
import sys

from corpusutil import ROOT

RECORDED = os.path.join(ROOT, "tests", "data", "apt")
LLVM = ["mlir-22-tools", "llvm-22", "lld-22"]


SHIM = """#!/bin/sh
echo "$(basename "$0") $*" >> "$SHIM_LOG"
case "$(basename "$0") $1" in
  "apt-cache policy") cat "$SHIM_POLICY" ;;
  "apt-get install") case " $* " in *" -s "*) cat "$SHIM_SIMULATION" ;; esac ;;
  "dpkg-query -W") for p in $SHIM_INSTALLED; do [ "$p" = "$3" ] && printf 'install ok installed'; done ;;
esac
exit 0
"""


def run_bootstrap(tmp_path, installed, policy, simulation, codename="bookworm", profile=None):
    """tools/bootstrap in a copy of the repository's tools, with apt shims and a finished venv (so only the apt
    part decides anything); returns (completed process, the shims' log, the apt folder it may write)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    for name in ("bootstrap", "apt_plan.py"):
        shutil.copy(os.path.join(ROOT, "tools", name), repo / "tools" / name)
    (repo / "pyproject.toml").write_text("")
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").write_text("#!/bin/sh\nexit 0\n")
    (venv_bin / "python").chmod(0o755)
    for stamp in (".bootstrap-stamp", ".launcher-stamp"):
        (repo / ".venv" / stamp).write_text("")
    shims = tmp_path / "shims"
    shims.mkdir()
    for tool in ("apt-get", "apt-cache", "dpkg-query"):
        (shims / tool).write_text(SHIM)
        (shims / tool).chmod(0o755)
    os.symlink(sys.executable, shims / "python3")
    apt_etc = tmp_path / "etc-apt"
    (apt_etc / "sources.list.d").mkdir(parents=True)
    (apt_etc / "preferences.d").mkdir()
    (tmp_path / "os-release").write_text(f"VERSION_CODENAME={codename}\n")
    log = tmp_path / "log"
    log.write_text("")
    env = dict(os.environ, PATH=f"{shims}:{os.environ['PATH']}", SHIM_LOG=str(log), SHIM_INSTALLED=" ".join(installed),
               SHIM_POLICY=os.path.join(RECORDED, policy), SHIM_SIMULATION=os.path.join(RECORDED, simulation),
               BOOTSTRAP_APT_ETC=str(apt_etc), BOOTSTRAP_OS_RELEASE=str(tmp_path / "os-release"))
    run = subprocess.run(["bash", str(repo / "tools" / "bootstrap"), *([profile] if profile else [])],
                         capture_output=True, text=True, env=env)
    return run, log.read_text().splitlines(), apt_etc


EXAMPLES = LLVM + ["rocm-device-libs", "binutils", "gcc", "spirv-tools"]


def test_with_everything_installed_it_asks_apt_nothing(tmp_path):
    run, log, _etc = run_bootstrap(tmp_path, EXAMPLES, "bookworm-security.policy.txt", "bookworm.install-new.sim.txt")
    assert run.returncode == 0, run.stderr
    assert [line for line in log if not line.startswith("dpkg-query")] == []


def test_debian_12_installs_the_missing_packages_from_its_own_suites(tmp_path):
    run, log, etc = run_bootstrap(tmp_path, ["binutils", "gcc"], "bookworm-security.policy.txt",
                                  "bookworm.install-new.sim.txt")
    assert run.returncode == 0, run.stderr
    installs = [line for line in log if line.startswith("apt-get install -y")]
    assert len(installs) == 1 and set(installs[0].split()[-5:]) == {*LLVM, "rocm-device-libs", "spirv-tools"}
    assert "-t" not in installs[0].split()  # never a target release: it overrides the pin
    assert os.listdir(etc / "sources.list.d") == []  # no other suite added


def test_the_examples_do_not_install_test_only_tools_and_the_tests_do(tmp_path):
    run, log, _etc = run_bootstrap(tmp_path / "examples", EXAMPLES, "bookworm-security.policy.txt",
                                   "bookworm.install-new.sim.txt")
    assert run.returncode == 0 and not any("chromium" in line or "redis-server" in line for line in log)
    run, log, _etc = run_bootstrap(tmp_path / "test", EXAMPLES, "bookworm-security.policy.txt",
                                   "bookworm.install-new.sim.txt", profile="test")
    installs = [line for line in log if line.startswith("apt-get install -y")]
    assert run.returncode == 0 and len(installs) == 1 and installs[0].split()[-4:] == ["chromium", "redis-server", "cmake", "ninja-build"]


def test_an_install_that_would_upgrade_or_remove_is_refused_and_installs_nothing(tmp_path):
    run, log, etc = run_bootstrap(tmp_path, ["binutils", "gcc", "rocm-device-libs", "spirv-tools"],
                                  "bookworm-no-security.policy.txt", "bookworm-with-trixie.upgrade.sim.txt")
    assert run.returncode == 1
    assert "would change installed packages; nothing was installed" in run.stderr
    assert "libc6" in run.stderr and "libgcc-12-dev" in run.stderr
    assert not any(line.startswith("apt-get install -y") for line in log), log
    # Debian 12 without its security suite: Debian 13 was offered at a low pin, never as a target release.
    assert os.listdir(etc / "sources.list.d") == ["scons-mlir-gpu-trixie.sources"]
    assert "Pin-Priority: 100" in (etc / "preferences.d" / "scons-mlir-gpu-trixie").read_text()


def test_another_distribution_without_the_packages_is_told_what_to_add(tmp_path):
    run, log, etc = run_bootstrap(tmp_path, ["binutils", "gcc", "rocm-device-libs", "spirv-tools"],
                                  "bookworm-no-security.policy.txt", "bookworm.install-new.sim.txt",
                                  codename="jammy")
    assert run.returncode == 1 and "no configured apt suite has: mlir-22-tools llvm-22 lld-22" in run.stderr
    assert os.listdir(etc / "sources.list.d") == []
    assert not any(line.startswith("apt-get install") for line in log)
