"""Run one script of a skill bundle, confined (seed 004 run_skill, SPEC §6.2 and §10).

Skill files are untrusted input: whoever can publish a skill chooses the code that runs here.
Every run gets an argument list (no shell), a scrubbed environment, rlimits (processes, memory,
CPU time, file size, open files), a wall-clock timeout and capped output. How far the script is
confined depends on the isolation mode, `RUN_SKILL_SANDBOX` in the settings:

- `bwrap` (the default): bubblewrap puts the script in new user, PID, network, mount, IPC and
  UTS namespaces. It runs as uid/gid 65534 with no capabilities and no network at all (not even
  loopback to PostgreSQL or Redis). It sees a read-only root made of /usr (with the /bin, /lib
  links), the few /etc files the dynamic linker needs, a fresh /proc that shows only its own
  processes and a /dev of device nodes and links: not the app's source, not var/, not /root,
  not the worker's environment. One size-capped tmpfs is the only place it can write: it holds
  the working directory (the skill's files bound read-only into it) and the directory /dev/shm
  leads to, so POSIX shared memory and semaphores count against the same cap; it vanishes with
  the namespace. Where the worker can make one, a cgroup of the run's own (cgroups.py) caps the
  memory and tasks of the run as a whole, which the per-process rlimits cannot. The sandbox's
  PID 1 is bubblewrap's init: when the script exits, is killed by the timeout, or the worker
  dies (--die-with-parent), the kernel kills every process left in the namespace, detached
  (setsid) grandchildren included. A worker running as root drops to
  uid 65534 before starting bubblewrap, because the kernel does not enforce RLIMIT_NPROC on
  root's processes.
- `none`: a plain subprocess as the worker's user in a temporary directory, only for machines
  without bubblewrap. The script can read whatever the worker can (its files, the database over
  the network) and can leave processes behind; the setting must be chosen explicitly.

With `bwrap` and no working bubblewrap, runs fail closed with SandboxUnavailable.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import IO, Any

from agents.runtime.cgroups import RunCgroup, run_cgroup_create, run_cgroup_remove


class Isolation(StrEnum):
    BWRAP = "bwrap"
    NONE = "none"


@dataclass(frozen=True)
class SandboxLimits:
    timeout_seconds: float = 30.0
    output_chars: int = 20_000  # per stream, as shown to the model
    file_size_bytes: int = 32 * 1024 * 1024  # RLIMIT_FSIZE: bounds output files and anything written
    memory_bytes: int = 1024 * 1024 * 1024  # RLIMIT_AS (address space) of each process
    processes: int = 64  # RLIMIT_NPROC; with bwrap counted inside the sandbox's user namespace
    open_files: int = 256  # RLIMIT_NOFILE
    workdir_bytes: int = 64 * 1024 * 1024  # bwrap only: all a script can store, /dev/shm included
    # bwrap only, where a cgroup can be made (cgroups.py): the memory of the run's processes
    # together, with its tmpfs, shared memory and the kernel's memory for them.
    run_memory_bytes: int = 512 * 1024 * 1024


DEFAULT_LIMITS = SandboxLimits()

SANDBOX_ID = 65534  # "nobody": the uid and gid inside the sandbox, and outside it for a root worker
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
# Host paths the sandbox sees, read-only. /etc is limited to what the dynamic linker and a few
# programs need to start; /etc/passwd, /etc/hosts and the rest are left out.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Tasks of a run besides the script's: bubblewrap's own process and the sandbox's init.
BWRAP_TASKS = 2
PRLIMIT = "/usr/bin/prlimit"  # util-linux: sets the rlimits inside the sandbox, then runs the script
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
# The host's device nodes the sandbox's /dev holds (bubblewrap's --dev set); they store nothing.
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


@dataclass(frozen=True)
class BundleFile:
    path: str  # relative POSIX path inside the skill
    content: bytes
    executable: bool


@dataclass(frozen=True)
class ScriptRun:
    exit_code: int | None  # None when killed for the timeout
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    out_of_memory: bool = False  # the kernel killed a process of the run at its memory cap (cgroups.py)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class SandboxError(Exception):
    """The script cannot be run at all (bad path, not executable)."""


class SandboxUnavailable(SandboxError):
    """No sandbox can be set up on this machine, so nothing is run (fail closed)."""


def safe_relative_path(path: str) -> PurePosixPath:
    """A bundle path that stays inside its folder: relative, no `..`, no empty parts."""
    candidate = PurePosixPath(path)
    if not path or "\x00" in path or candidate.is_absolute() or ".." in candidate.parts or "\\" in path:
        raise SandboxError(f"invalid path {path!r}: use a relative path inside the skill, without '..'")
    return candidate


def run_script(
    files: list[BundleFile],
    entry: str,
    args: list[str],
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    isolation: Isolation = Isolation.BWRAP,
) -> ScriptRun:
    entry_file = next((f for f in files if f.path == entry), None)
    if entry_file is None:
        raise SandboxError(f"no file {entry!r} in the skill")
    is_python = entry.endswith(".py")
    if not is_python and not entry_file.executable:
        raise SandboxError(f"{entry!r} is not a Python file and is not marked executable")
    bwrap = _bwrap_or_refuse() if isolation is Isolation.BWRAP else None
    with tempfile.TemporaryDirectory(prefix="skill-run-") as workdir:
        root = Path(workdir)
        for bundle_file in files:
            _write_file(root, bundle_file)
        script = str(root / entry)
        if bwrap is None:
            # "-s": no user site-packages; the scrubbed environment already drops PYTHON* variables.
            command = [sys.executable, "-s", script, *args] if is_python else [script, *args]
            env = _script_environment(root, os.environ.get("PATH", os.defpath))
            return _run(command, cwd=root, env=env, limits=limits, preexec_fn=_rlimit_setter(limits))
        script = str(_sandbox_workdir(root) / entry)
        command = [_sandbox_python(), "-s", script, *args] if is_python else [script, *args]
        return _run_in_bwrap(bwrap, root, command, limits)


def sandbox_problem(isolation: Isolation) -> str | None:
    """Why run_skill cannot run scripts in this mode, or None when it can (for start-up checks)."""
    if isolation is Isolation.NONE:
        return None
    try:
        _bwrap_or_refuse()
        _sandbox_python()
    except SandboxUnavailable as error:
        return str(error)
    return None


def _write_file(root: Path, bundle_file: BundleFile) -> None:
    target = root / safe_relative_path(bundle_file.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bundle_file.content)
    target.chmod(0o700 if bundle_file.executable else 0o600)


def _script_environment(workdir: Path, path: str) -> dict[str, str]:
    # No secrets from the worker's environment (API keys, DATABASE_URL) reach skill code. HOME
    # and TMPDIR point at the working directory: the one place a script may write.
    return {"PATH": path, "LANG": "C.UTF-8", "HOME": str(workdir), "TMPDIR": str(workdir)}


# --- bubblewrap -------------------------------------------------------------------------------


# bwrap paths that have set up a sandbox in this process. A failure is not remembered: once an
# administrator installs bubblewrap or enables user namespaces, the next run checks again.
_working_bwraps: set[str] = set()


def _bwrap_or_refuse() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "run_skill is disabled: no sandbox is available (bubblewrap's `bwrap` is not on PATH). "
            "Install bubblewrap (Debian: apt-get install bubblewrap), or set RUN_SKILL_SANDBOX=none "
            "to run skill scripts without isolation (see docs/operators/sandbox.md)."
        )
    if not os.access(PRLIMIT, os.X_OK):
        raise SandboxUnavailable(f"run_skill is disabled: {PRLIMIT} (util-linux) is missing")
    if bwrap not in _working_bwraps:
        _check_bwrap(bwrap)
        _working_bwraps.add(bwrap)
    return bwrap


def _check_bwrap(bwrap: str) -> None:
    """Start an empty sandbox once: bwrap fails the same way for every script when, for example,
    user namespaces are disabled, and that must read as "no sandbox", not as a script's error."""
    with tempfile.TemporaryDirectory(prefix="skill-run-") as workdir:
        try:
            probe = _run_in_bwrap(bwrap, Path(workdir), ["true"], DEFAULT_LIMITS)
            detail = "" if probe.ok else probe.stderr.strip()[:500] or f"exit code {probe.exit_code}"
        except OSError as error:  # e.g. bwrap not executable by the sandbox user
            detail = f"{bwrap}: {error.strerror}"
    if detail:
        raise SandboxUnavailable(
            f"run_skill is disabled: bubblewrap cannot create a sandbox on this machine ({detail}). "
            "It needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "user.max_user_namespaces > 0); or set RUN_SKILL_SANDBOX=none to run skill scripts "
            "without isolation (see docs/operators/sandbox.md)."
        )


def _sandbox_python() -> str:
    # The worker's own interpreter may live anywhere (a virtualenv, pyenv under /root) that the
    # sandbox does not show, so Python scripts run with the system's python3 from /usr.
    python = shutil.which("python3", path=SANDBOX_PATH)
    if python is None:
        raise SandboxUnavailable(f"run_skill is disabled: no python3 in {SANDBOX_PATH} to run scripts in the sandbox")
    return python


def _sandbox_workdir(workdir: Path) -> Path:
    """The script's working directory inside the sandbox: a folder of the run's writable tmpfs,
    which is mounted at the host's temporary directory for the run."""
    return workdir / "work"


def _bwrap_argv(bwrap: str, workdir: Path, limits: SandboxLimits, command: list[str]) -> list[str]:
    work = _sandbox_workdir(workdir)
    shm = workdir / "shm"
    argv = [
        bwrap,
        "--unshare-all",  # user, pid, net, mount, ipc, uts (+ cgroup where it can)
        "--unshare-user",
        "--disable-userns",  # no nested user namespaces: no way back to capabilities
        "--uid", str(SANDBOX_ID),
        "--gid", str(SANDBOX_ID),
        "--die-with-parent",
        "--new-session",  # no controlling terminal to inject keystrokes into (TIOCSTI)
        "--hostname", "sandbox",
    ]  # fmt: skip
    for directory in SYSTEM_DIRS:
        if os.path.islink(directory):  # merged /usr: /bin -> usr/bin
            argv += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            argv += ["--ro-bind", directory, directory]
    for path in ETC_FILES:
        argv += ["--ro-bind-try", path, path]
    argv += ["--proc", "/proc"]
    # All a script may store: one fresh, size-capped tmpfs at the temp dir's path, holding the
    # working directory (the skill's files bound read-only into it from the host copy) and the
    # folder /dev/shm leads to. Separate tmpfs mounts would each have a cap of their own.
    argv += ["--size", str(limits.workdir_bytes), "--perms", "0700", "--tmpfs", str(workdir)]
    argv += ["--perms", "0700", "--dir", str(work), "--perms", "0700", "--dir", str(shm)]
    for entry in sorted(os.listdir(workdir)):
        argv += ["--ro-bind", str(workdir / entry), str(work / entry)]
    # /dev holds device nodes and links on a read-only one-page tmpfs. bubblewrap's --dev would
    # add a writable tmpfs the size of half the host's memory, /dev/shm being a folder in it.
    argv += ["--size", "4096", "--perms", "0755", "--tmpfs", "/dev"]
    for device in DEVICES:
        argv += ["--dev-bind", f"/dev/{device}", f"/dev/{device}"]
    argv += ["--symlink", "/proc/self/fd", "/dev/fd"]
    for number, stream in enumerate(("stdin", "stdout", "stderr")):
        argv += ["--symlink", f"/proc/self/fd/{number}", f"/dev/{stream}"]
    argv += ["--symlink", str(shm), "/dev/shm", "--remount-ro", "/dev"]
    argv += ["--remount-ro", "/", "--chdir", str(work), "--clearenv"]
    for name, value in _script_environment(work, SANDBOX_PATH).items():
        argv += ["--setenv", name, value]
    # The rlimits are set inside: RLIMIT_NPROC then counts the sandbox's processes only.
    return [*argv, "--", PRLIMIT, *_prlimit_options(limits), "--", *command]


def _run_in_bwrap(bwrap: str, workdir: Path, command: list[str], limits: SandboxLimits) -> ScriptRun:
    try:
        cgroup = run_cgroup_create(memory_bytes=limits.run_memory_bytes, processes=limits.processes + BWRAP_TASKS)
    except OSError as error:  # this machine gave groups before: no run without its cap
        raise SandboxUnavailable(f"run_skill is disabled: cannot make the run's cgroup ({error})") from error
    try:
        run = _run(
            _bwrap_argv(bwrap, workdir, limits, command),
            cwd=workdir,
            env={"PATH": SANDBOX_PATH},  # bwrap's own: its init's /proc/1/environ can be read inside
            limits=limits,
            preexec_fn=_sandbox_child_setup(workdir, cgroup),
        )
        return replace(run, out_of_memory=cgroup is not None and cgroup.oom_kills() > 0)
    except subprocess.SubprocessError as error:  # the child could not join the cgroup or drop to 65534
        raise SandboxUnavailable(f"run_skill is disabled: the sandbox's process could not start ({error})") from error
    finally:
        if cgroup is not None:
            run_cgroup_remove(cgroup)


def _sandbox_child_setup(workdir: Path, cgroup: RunCgroup | None) -> Callable[[], None] | None:
    """What bwrap's process does between fork and exec: join the run's cgroup, so that nothing
    of the run is outside it, then, when the worker is root, become uid/gid 65534 (the kernel
    does not enforce RLIMIT_NPROC on root's processes), which is given the run's copy of the
    skill first. In this order the cgroup is joined with the worker's rights on every kernel."""
    as_root = os.geteuid() == 0
    if not as_root and cgroup is None:
        return None  # nothing to do: Popen may then use vfork, cheaper than fork for a big worker
    if as_root:
        for path in [workdir, *workdir.rglob("*")]:
            os.chown(path, SANDBOX_ID, SANDBOX_ID, follow_symlinks=False)

    def setup() -> None:
        if cgroup is not None:
            cgroup.join()
        if as_root:
            os.setgroups([])
            os.setgid(SANDBOX_ID)
            os.setuid(SANDBOX_ID)

    return setup


# --- limits and the process itself ------------------------------------------------------------


def _rlimits(limits: SandboxLimits) -> dict[int, int]:
    return {
        resource.RLIMIT_CPU: int(limits.timeout_seconds) + 1,
        resource.RLIMIT_FSIZE: limits.file_size_bytes,
        resource.RLIMIT_AS: limits.memory_bytes,
        resource.RLIMIT_NPROC: limits.processes,
        resource.RLIMIT_NOFILE: limits.open_files,
        resource.RLIMIT_CORE: 0,
    }


PRLIMIT_OPTIONS = {
    resource.RLIMIT_CPU: "--cpu",
    resource.RLIMIT_FSIZE: "--fsize",
    resource.RLIMIT_AS: "--as",
    resource.RLIMIT_NPROC: "--nproc",
    resource.RLIMIT_NOFILE: "--nofile",
    resource.RLIMIT_CORE: "--core",
}


def _prlimit_options(limits: SandboxLimits) -> list[str]:
    return [f"{PRLIMIT_OPTIONS[kind]}={value}:{value}" for kind, value in _rlimits(limits).items()]


def _rlimit_setter(limits: SandboxLimits) -> Callable[[], None]:
    """The rlimits for an unconfined run (`none`), but for RLIMIT_NPROC: outside a user namespace
    it counts every process and thread of the worker's user, so it would stop a script's first
    subprocess in a busy worker (and root is exempt anyway)."""
    unconfined = {kind: value for kind, value in _rlimits(limits).items() if kind != resource.RLIMIT_NPROC}

    def apply() -> None:
        for kind, value in unconfined.items():
            resource.setrlimit(kind, (value, value))

    return apply


def _run(command: list[str], *, cwd: Path, env: dict[str, str], limits: SandboxLimits, **options: Any) -> ScriptRun:
    # Output goes to unnamed temp files, not pipes: a chatty script cannot fill memory, and
    # RLIMIT_FSIZE bounds the files.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own process group, so the kill reaches its children too
            **options,
        )
        timed_out = False
        try:
            exit_code: int | None = process.wait(timeout=limits.timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = None
        finally:
            # However the wait ends (exit, timeout, or an exception such as Celery's soft time
            # limit), nothing the script started in its group may outlive the run. Killing
            # bwrap kills its init (--die-with-parent), and with it the whole PID namespace.
            _kill_group(process)
        stdout, stdout_cut = _read_capped(out, limits.output_chars)
        stderr, stderr_cut = _read_capped(err, limits.output_chars)
    return ScriptRun(exit_code, stdout, stderr, timed_out, stdout_cut or stderr_cut)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone (PermissionError: macOS reports a reaped group so)
    process.wait()


def _read_capped(stream: IO[bytes], limit: int) -> tuple[str, bool]:
    stream.seek(0)
    # A character is at most 4 bytes in UTF-8: reading limit*4+4 bytes yields more than `limit`
    # characters whenever there was more output than we show.
    text = stream.read(limit * 4 + 4).decode("utf-8", errors="replace")
    return text[:limit], len(text) > limit
