"""The run_skill sandbox (agents/runtime/sandbox.py): a hostile skill's every escape fails, the
limits hold, the whole process tree dies however a run ends, and without bubblewrap run_skill
refuses to run (fails closed) unless RUN_SKILL_SANDBOX=none says otherwise.

Each claim in docs/reliability.md points at a test here or in test_sandbox_worker.py.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from agents.runtime import cgroups, sandbox
from agents.runtime.sandbox import BundleFile, Isolation, SandboxLimits, SandboxUnavailable, run_script
from agents.runtime.skill_tools import skill_tools
from agents.runtime.tools import ToolContext, ToolRegistry, ToolResult, run_tool
from tests.agents.runtime.hostile import ATTEMPTS, ROOT, hostile_skill
from tests.agents.runtime.processes import processes_with, wait_until_gone
from tests.worker import wait_for

# The hostile script makes 19 attempts, the fork bomb included; on two shared cores it needs a
# few seconds at most.
HOSTILE_LIMITS = SandboxLimits(timeout_seconds=60)
FAST = SandboxLimits(timeout_seconds=10)
CANARY = f"canary-{uuid.uuid4().hex}"
SECRETS = [CANARY, "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_SUPERUSER_PASSWORD"]


@pytest.fixture
def context(store, workspace) -> ToolContext:
    return ToolContext(workspace=workspace, store=store)


def run(
    tool_name: str,
    arguments: dict,
    context: ToolContext,
    limits: SandboxLimits = FAST,
    isolation: Isolation = Isolation.BWRAP,
) -> ToolResult:
    tool = ToolRegistry(skill_tools(limits, isolation)).get(tool_name)
    assert tool.validation_errors(arguments) == []
    return run_tool(tool, arguments, context)


@pytest.fixture
def canary_in_environment(monkeypatch):
    monkeypatch.setenv("SANDBOX_CANARY", CANARY)


def describe(escaped: dict[str, str]) -> str:
    return "these escapes got through the sandbox:\n" + "\n".join(f"- {name}: {how}" for name, how in escaped.items())


# Attempts that `none` still stops (a scrubbed environment, the rlimits), did not make (the
# fork bomb), or whose success unconfined depends on the machine: internet access, PostgreSQL's
# Unix socket, what other processes' environments hold.
NOT_ESCAPING_UNCONFINED = {
    "own_environment",
    "memory_2gib",
    "fork_bomb",
    "tcp_internet",
    "unix_socket_postgres",
    "parent_environ",
    "any_environ",
}


# --- the hostile skill --------------------------------------------------------------------


def test_a_hostile_run_skill_script_is_blocked_in_every_attempt(store, context, tmp_path, canary_in_environment):
    with hostile_skill(os.getpid(), var_dir=ROOT / "var", secrets=SECRETS) as hostile:
        store.add("hostile", files=hostile.files())

        result = run("run_skill", {"skill_name": "hostile", "script": "escape.py"}, context, HOSTILE_LIMITS)

        assert result.ok, result.content
        escaped = hostile.escapes(result.content)
        assert escaped == {}, describe(escaped)
        verdict = hostile.verdict(result.content)
        assert verdict["fork_bomb"][1].startswith("stopped after"), verdict["fork_bomb"]
        assert "Network is unreachable" in verdict["tcp_postgres"][1] or "refused" in verdict["tcp_postgres"][1]


def test_a_hostile_code_skill_run_by_use_skill_is_blocked_in_every_attempt(store, context, canary_in_environment):
    with hostile_skill(os.getpid(), var_dir=ROOT / "var", secrets=SECRETS) as hostile:
        store.add("hostile-code", files=hostile.files(entry="skill.py"))

        result = run("use_skill", {"skill_name": "hostile-code"}, context, HOSTILE_LIMITS)

        assert result.ok, result.content
        escaped = hostile.escapes(result.content)
        assert escaped == {}, describe(escaped)


def test_without_a_sandbox_the_same_probes_report_the_escapes(store, context, canary_in_environment):
    """The control: RUN_SKILL_SANDBOX=none lets the hostile script through, so each probe above
    can fail. (No fork bomb here: unconfined, it would load a shared machine.)"""
    with hostile_skill(os.getpid(), var_dir=ROOT / "var", secrets=SECRETS, forks=0) as hostile:
        store.add("hostile", files=hostile.files())

        result = run(
            "run_skill", {"skill_name": "hostile", "script": "escape.py"}, context, HOSTILE_LIMITS, Isolation.NONE
        )

        escaped = hostile.escapes(result.content, outlives_seconds=1.0)
    assert ATTEMPTS - NOT_ESCAPING_UNCONFINED <= set(escaped), escaped
    # What `none` still does: a scrubbed environment and the rlimits.
    assert "own_environment" not in escaped and "memory_2gib" not in escaped


# --- limits -------------------------------------------------------------------------------


def test_the_script_runs_as_an_unprivileged_user_with_no_capabilities(store, context):
    script = "import os\nprint(os.getuid(), os.getgid())\nprint(open('/proc/self/status').read())\n"
    store.add("demo", files={"scripts/who.py": script})

    result = run("run_skill", {"skill_name": "demo", "script": "who.py"}, context)

    assert result.ok, result.content
    assert "65534 65534" in result.content
    for capabilities in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        assert f"{capabilities}:\t0000000000000000" in result.content
    assert "NoNewPrivs:\t1" in result.content  # setuid binaries cannot raise privileges either


def test_the_system_is_read_only_and_the_app_is_not_there(store, context):
    script = textwrap.dedent(
        f"""
        import os
        print(sorted(os.listdir('/')))
        print(os.path.exists({str(ROOT)!r}), os.path.exists('/root/.bashrc'), os.path.exists('/etc/passwd'))
        for target in ('/usr/pwned', '/etc/pwned', '/pwned'):
            try:
                open(target, 'w')
                print('wrote', target)
            except OSError as error:
                print('refused', target, error.strerror)
        """
    )
    store.add("demo", files={"scripts/look.py": script})

    result = run("run_skill", {"skill_name": "demo", "script": "look.py"}, context)

    assert result.ok, result.content
    assert "False False False" in result.content
    assert "wrote" not in result.content
    assert result.content.count("Read-only file system") == 3
    top = set(ast.literal_eval(result.content.split("--- stdout ---\n")[1].splitlines()[0]))
    assert top <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr"}, top


def test_the_working_directory_is_writable_capped_and_gone_afterwards(store, context):
    script = textwrap.dedent(
        """
        import os
        print(os.getcwd())
        open('result.txt', 'w').write('kept for the run')
        print(open('result.txt').read())
        try:
            for index in range(100):
                with open(f'big-{index}', 'wb') as handle:
                    handle.write(b'x' * 1024 * 1024)
            print('filled 100 MiB')
        except OSError as error:
            print('stopped at', index, 'MiB:', error.strerror)
        """
    )
    store.add("demo", files={"scripts/write.py": script})

    result = run(
        "run_skill", {"skill_name": "demo", "script": "write.py"}, context, SandboxLimits(workdir_bytes=8 * 1024 * 1024)
    )

    assert result.ok, result.content
    workdir = Path(result.content.split("--- stdout ---\n")[1].splitlines()[0])
    assert "kept for the run" in result.content
    assert "No space left on device" in result.content and "filled" not in result.content
    assert not workdir.exists()


# Run inside the sandbox: finds every directory a script can create a file in by walking each
# mount it sees (no list of known paths: a writable mount added later is found too; a symlink such
# as /dev/shm leads into one of them), and writes a little past the cap into each one, keeping what
# it wrote, so that places sharing one budget find it spent.
WRITABLE_PLACES_SCRIPT = """
import json, os, sys

cap = int(sys.argv[1])
chunk = 256 * 1024
mount_points = []
for line in open('/proc/self/mountinfo'):
    fields = line.split()
    mount_point = fields[4].encode().decode('unicode_escape')  # mountinfo escapes spaces as \\040
    if 'ro' not in fields[5].split(','):  # below a read-only mount the kernel refuses every write
        mount_points.append(mount_point)


def device(path):
    try:
        return os.lstat(path).st_dev
    except OSError:  # gone meanwhile (a /proc entry)
        return None


directories = set()
for mount_point in mount_points:
    if not os.path.isdir(mount_point) or os.path.islink(mount_point):
        continue  # a bound device node: it stores nothing
    for directory, subdirectories, _ in os.walk(mount_point):
        directories.add(directory)
        subdirectories[:] = [d for d in subdirectories if device(os.path.join(directory, d)) == device(mount_point)]

written, stopped, sizes = {}, {}, {}
for directory in sorted(directories):
    try:
        handle = os.open(os.path.join(directory, 'fill'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        continue
    stat = os.statvfs(directory)
    sizes[directory] = stat.f_blocks * stat.f_frsize
    written[directory] = 0
    try:
        while written[directory] <= cap:
            written[directory] += os.write(handle, b'x' * chunk)
    except OSError as error:
        stopped[directory] = error.strerror
    os.close(handle)
dev = os.statvfs('/dev')
print(json.dumps({'written': written, 'stopped': stopped, 'sizes': sizes, 'dev_bytes': dev.f_blocks * dev.f_frsize,
                  'cwd': os.getcwd(), 'shm': os.path.realpath('/dev/shm')}))
"""


def test_every_writable_place_in_the_sandbox_shares_the_working_directory_cap():
    """/dev/shm, /dev, /tmp or any mount a later change adds: a script that fills every place it
    can write to gets no more than the working directory's cap in all, and each place says so."""
    cap = 4 * 1024 * 1024
    limits = SandboxLimits(timeout_seconds=60, workdir_bytes=cap)

    run_ = run_script(
        [BundleFile("fill.py", WRITABLE_PLACES_SCRIPT.encode(), False)], "fill.py", [str(cap)], limits=limits
    )

    assert run_.ok, run_.stderr
    found = json.loads(run_.stdout)
    written, stopped = found["written"], found["stopped"]
    assert found["cwd"] in written and found["shm"] in written, found  # the search finds what it must
    assert sum(written.values()) <= cap, f"wrote {written}, past the {cap}-byte cap in all"
    assert set(stopped) == set(written), f"places that took more than the cap: {set(written) - set(stopped)}"
    assert stopped[found["cwd"]] == stopped[found["shm"]] == "No space left on device", stopped
    assert found["dev_bytes"] <= cap and all(size <= cap for size in found["sizes"].values()), found


def test_python_multiprocessing_works_in_the_sandbox():
    """Its locks and queues are POSIX semaphores, files in /dev/shm: /dev/shm stays writable."""
    script = textwrap.dedent(
        """
        import multiprocessing
        from multiprocessing import shared_memory

        if __name__ == '__main__':
            with multiprocessing.Pool(2) as pool:
                print(sum(pool.map(abs, [-1, -2, 3])))
            memory = shared_memory.SharedMemory(create=True, size=1024)
            memory.buf[:5] = b'hello'
            attached = shared_memory.SharedMemory(memory.name)
            print(bytes(attached.buf[:5]).decode())
            attached.close()
            memory.close()
            memory.unlink()
        """
    )

    run_ = run_script([BundleFile("pool.py", script.encode(), False)], "pool.py", [], limits=FAST)

    assert run_.ok, run_.stderr
    assert run_.stdout == "6\nhello\n"


def test_file_size_memory_and_process_limits_apply(store, context):
    script = textwrap.dedent(
        """
        import os
        try:
            open('big', 'wb').write(b'x' * 2 * 1024 * 1024)
            print('fsize: wrote 2 MiB')
        except OSError as error:
            print('fsize:', error.strerror)
        try:
            bytearray(512 * 1024 * 1024)
            print('memory: got 512 MiB')
        except MemoryError:
            print('memory: refused')
        print('nproc:', open('/proc/self/limits').read().split('Max processes')[1].split()[0])
        """
    )
    store.add("demo", files={"scripts/limits.py": script})
    limits = SandboxLimits(file_size_bytes=1024 * 1024, memory_bytes=256 * 1024 * 1024, processes=20)

    result = run("run_skill", {"skill_name": "demo", "script": "limits.py"}, context, limits)

    assert result.ok, result.content
    assert "fsize: File too large" in result.content
    assert "memory: refused" in result.content
    assert "nproc: 20" in result.content


# --- the run's memory as a whole -----------------------------------------------------------

# Four holders of a quarter of the total each, held at the same time; each way is one the
# per-process rlimits miss: more processes, memfd files under the file size limit, SysV segments
# their creators leave behind, inodes on the tmpfs, socket buffers (kernel memory). Pipes need no
# test of their own: the kernel caps a user's pipe buffers (pipe-user-pages-soft, 64 MiB).
MEMORY_HOG_SCRIPT = """\
import ctypes
import os
import socket
import sys

MIB = 1024 * 1024
mode, total = sys.argv[1], int(sys.argv[2]) * MIB
share = total // 4
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


def hold() -> None:
    if mode == "processes":
        memory = bytearray(share)
        memory[::4096] = b"x" * len(range(0, share, 4096))
    elif mode == "memfd":
        fd = os.memfd_create("hog")
        for _ in range(share // MIB):
            os.write(fd, b"x" * MIB)
    elif mode == "sysv":  # left behind by a process that exits: IPC_RMID is never asked for
        segment = libc.shmget(0, share, 0o1600)
        address = libc.shmat(segment, None, 0)
        if segment < 0 or address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shm")
        ctypes.memset(address, 120, share)
    elif mode == "sockets":  # kernel buffers, queued both ways and never read
        queued, pairs = 0, []
        while queued < share:
            pairs.append(socket.socketpair())
            for end in pairs[-1]:
                end.setblocking(False)
                try:
                    while queued < share:
                        queued += end.send(b"x" * 65536)
                except BlockingIOError:
                    pass
    elif mode == "inodes":  # about 1 KiB of kernel memory each, no data
        folder = f"files-{os.getpid()}"
        os.mkdir(folder)
        for number in range(share // 1024):
            os.close(os.open(f"{folder}/{number}", os.O_CREAT | os.O_WRONLY, 0o600))


ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(go_w)
        try:
            hold()
        except BaseException:
            os._exit(1)
        os.write(ready_w, b"r")
        os.close(ready_w)
        if mode != "sysv":
            os.read(go_r, 1)  # hold it until every holder is ready
        os._exit(0)
    children.append(pid)
    if mode == "sysv":
        os.waitpid(pid, 0)  # one after another: what each left behind stays
os.close(ready_w)
held = b""
while chunk := os.read(ready_r, 4):
    held += chunk
os.close(go_w)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children if mode != "sysv"]
print(f"held {len(held)} of 4 shares {codes}")
"""
MIB = 1024 * 1024


def run_groups() -> list[Path]:
    """This process's run groups still on the host, in every hierarchy."""
    places = cgroups._places()
    assert not isinstance(places, str)
    return [group for place in places for group in place.directory.glob(f"{cgroups.GROUP_PREFIX}{os.getpid()}-*")]


@pytest.fixture
def cgroup_available():
    if problem := cgroups.cgroup_problem():
        pytest.skip(f"no cgroup for skill runs on this machine: {problem}")


@pytest.mark.parametrize("way", ["processes", "memfd", "sysv", "inodes", "sockets"])
def test_a_run_cannot_hold_more_memory_than_its_cap_in_all(cgroup_available, way):
    """120 MiB in four parts against a 64 MiB cap: the run is stopped (its holders or the script
    killed by the cgroup's OOM killer) while a normal script with the same limits still runs, and
    no group is left behind."""
    limits = SandboxLimits(timeout_seconds=60, run_memory_bytes=64 * MIB)

    hog = run_script([BundleFile("hog.py", MEMORY_HOG_SCRIPT.encode(), False)], "hog.py", [way, "120"], limits=limits)
    normal = run_script([BundleFile("hello.py", b"print('hello')", False)], "hello.py", [], limits=limits)

    assert "held 4 of 4" not in hog.stdout, hog
    assert hog.stdout.startswith("held") or hog.exit_code == 128 + signal.SIGKILL, hog
    assert hog.out_of_memory and not normal.out_of_memory
    assert normal.ok and normal.stdout == "hello\n", normal
    assert run_groups() == []


def test_within_the_cap_the_same_script_holds_everything(cgroup_available):
    """The check of the check: 4 x 10 MiB of SysV segments fit in 64 MiB, so what stops the test
    above is the total, not the way."""
    limits = SandboxLimits(timeout_seconds=60, run_memory_bytes=64 * MIB)

    hog = run_script([BundleFile("hog.py", MEMORY_HOG_SCRIPT.encode(), False)], "hog.py", ["sysv", "40"], limits=limits)

    assert hog.ok and hog.stdout == "held 4 of 4 shares []\n", hog
    assert not hog.out_of_memory


def test_a_run_whose_process_did_not_land_in_its_cgroup_is_refused(cgroup_available, monkeypatch, tmp_path):
    """The join writes to a file the worker opened before the fork. Were that file not the group's
    any more (its descriptor closed and reused by another thread), the write would succeed and the
    run go uncapped: the child checks where it is and the run is refused instead."""
    real_create = cgroups.run_cgroup_create
    not_the_group = tmp_path / "cgroup.procs"

    def create_with_a_stray_descriptor(**limits):
        cgroup = real_create(**limits)
        stray = os.open(not_the_group, os.O_WRONLY | os.O_CREAT)
        for fd in cgroup.procs_fds:
            os.dup2(stray, fd, inheritable=False)
        os.close(stray)
        return cgroup

    monkeypatch.setattr(sandbox, "run_cgroup_create", create_with_a_stray_descriptor)
    limits = SandboxLimits(timeout_seconds=60, run_memory_bytes=64 * MIB)

    with pytest.raises(SandboxUnavailable, match="could not start"):
        run_script([BundleFile("hello.py", b"print('hello')", False)], "hello.py", [], limits=limits)
    assert not_the_group.read_text().startswith("0")  # the child wrote, and did not run
    assert run_groups() == []


def test_the_model_is_told_when_the_run_reached_its_memory_cap(cgroup_available, settings, store, context):
    """Through the tool registry a turn gets, so RUN_SKILL_MEMORY_BYTES is the cap that applies."""
    from agents.turns.tools import tool_registry

    script = "memory = bytearray(100 * 1024 * 1024)\nmemory[::4096] = b'x' * len(memory[::4096])\nprint('held')\n"
    store.add("demo", files={"scripts/big.py": script})
    settings.RUN_SKILL_MEMORY_BYTES = 64 * MIB

    result = run_tool(tool_registry().get("run_skill"), {"skill_name": "demo", "script": "big.py"}, context)

    assert not result.ok
    assert "exited with code 137" in result.content
    assert "the run reached its memory limit of 64 MiB" in result.content, result.content


def test_the_groups_of_a_worker_killed_mid_run_are_swept(cgroup_available):
    from agents.turns import services

    marker = f"swept-{uuid.uuid4().hex}"
    worker = start_fake_worker(marker)
    try:
        wait_for(lambda: processes_with(f"{marker}-child"), timeout=30, message="the sandboxed script's child")
    finally:
        worker.kill()
        worker.wait()
    assert wait_until_gone(marker)
    places = cgroups._places()
    assert not isinstance(places, str)
    left = [group for place in places for group in place.directory.glob(f"{cgroups.GROUP_PREFIX}{worker.pid}-*")]
    assert left, "the killed worker's run left no group: nothing to sweep"

    # The reaper's rounds: a group whose last processes the kernel is still tearing down is busy
    # and left for the next round (seen on a loaded CI machine), so a few rounds may be needed.
    def swept() -> bool:
        services.scratch_dirs_sweep()
        return not any(group.exists() for group in left)

    wait_for(swept, timeout=20, message="the killed worker's groups to be swept")


WITHOUT_CGROUPS = """
import django
django.setup()
from agents.checks import run_skill_sandbox_check
from agents.runtime.sandbox import BundleFile, run_script
print([warning.id for warning in run_skill_sandbox_check(None)], run_skill_sandbox_check(None)[0].msg)
print(run_script([BundleFile("hello.py", b"print('hello')", False)], "hello.py", []).stdout, end="")
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_where_no_cgroup_can_be_made_runs_go_on_and_the_start_up_says_so():
    """A worker that cannot make cgroups (here: an empty tmpfs over /sys/fs/cgroup in a mount
    namespace of its own) still runs scripts, and the check the worker also logs at start names
    the reason."""
    command = f"mount -t tmpfs none /sys/fs/cgroup && exec {sys.executable} -c {shlex.quote(WITHOUT_CGROUPS)}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}

    found = subprocess.run(
        ["unshare", "--mount", "sh", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert found.returncode == 0, found.stderr
    check, hello = found.stdout.splitlines()
    assert check.startswith("['agents.W003'] skill script runs get no memory cgroup"), check
    assert "cannot make a memory cgroup" in check, check
    assert hello == "hello"


# --- the process tree ends with the run, however it ends -----------------------------------


def test_a_detached_grandchild_dies_when_the_script_exits_normally(store, context):
    marker = f"lingering-{uuid.uuid4().hex}"
    script = textwrap.dedent(
        """
        import os, sys
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]])
            os._exit(0)
        os.wait()
        print('left a grandchild behind')
        """
    )
    store.add("demo", files={"scripts/linger.py": script})

    result = run("run_skill", {"skill_name": "demo", "script": "linger.py", "args": [marker]}, context)

    assert result.ok and "left a grandchild behind" in result.content, result.content
    assert wait_until_gone(marker), "the detached grandchild outlived the run"


# A stand-in for a worker: runs a script through run_script that starts a sleeping `<marker>-child`
# and sleeps. With an alarm, the alarm's exception interrupts the wait (as Celery's soft time
# limit does), the worker prints "interrupted" and lives on. The marker comes through the
# environment, so that the worker's own argv does not carry it.
FAKE_WORKER = """
import os, signal, sys, time
from agents.runtime import cgroups, sandbox
from agents.runtime.sandbox import BundleFile, SandboxLimits, run_script

class SoftTimeLimit(Exception):
    pass

def expire(signum, frame):
    raise SoftTimeLimit()

script = (
    b"import subprocess, sys, time\\n"
    b"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1] + '-child'])\\n"
    b"time.sleep(60)\\n"
)
signal.signal(signal.SIGALRM, expire)
signal.alarm(int(sys.argv[1]))
try:
    run_script([BundleFile('scripts/s.py', script, False)], 'scripts/s.py', [os.environ['MARKER']],
               limits=SandboxLimits(timeout_seconds=120))
except SoftTimeLimit:
    print('interrupted', flush=True)
time.sleep(60)
"""


@pytest.fixture(autouse=True)
def sweep_killed_workers_groups():
    """The fake workers below are killed mid-run; their run groups go when the test ends, as the
    reaper would remove them."""
    yield
    cgroups.run_cgroups_sweep(process_exists=lambda pid: Path(f"/proc/{pid}").exists())


def start_fake_worker(marker: str, *, alarm_seconds: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", FAKE_WORKER, str(alarm_seconds)],
        cwd=ROOT,
        env={**os.environ, "MARKER": marker},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_the_sandbox_dies_with_the_worker():
    """SIGKILL the process that called run_script (a worker crash): bubblewrap's
    --die-with-parent takes the sandbox, and with its PID namespace every process in it, down."""
    marker = f"orphan-{uuid.uuid4().hex}"
    worker = start_fake_worker(marker)
    try:
        wait_for(lambda: processes_with(f"{marker}-child"), timeout=30, message="the sandboxed script's child")
    finally:
        worker.kill()
        worker.wait()

    assert wait_until_gone(marker), "sandboxed processes outlived the worker that started them"


def test_the_sandbox_dies_when_the_wait_is_interrupted():
    """An exception while waiting for the script (Celery's soft time limit, a signal handler)
    kills the sandbox before it propagates; the worker itself lives on."""
    marker = f"interrupted-{uuid.uuid4().hex}"
    worker = start_fake_worker(marker, alarm_seconds=3)
    try:
        wait_for(lambda: processes_with(f"{marker}-child"), timeout=30, message="the sandboxed script's child")
        assert worker.stdout is not None and worker.stdout.readline() == "interrupted\n"
        assert wait_until_gone(marker), "sandboxed processes outlived the interrupted run"
        assert worker.poll() is None
    finally:
        worker.kill()
        worker.wait()


# --- fail closed --------------------------------------------------------------------------


def test_without_bubblewrap_run_skill_refuses_and_says_how_to_fix_it(store, context, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on PATH
    store.add("demo", files={"scripts/hello.py": "print('ran')\n", "skill.py": "print('ran')\n"})

    for tool, arguments in [
        ("run_skill", {"skill_name": "demo", "script": "hello.py"}),
        ("use_skill", {"skill_name": "demo"}),
    ]:
        result = run(tool, arguments, context)

        assert not result.ok
        assert "no sandbox is available" in result.content and "RUN_SKILL_SANDBOX=none" in result.content
        assert "--- stdout ---" not in result.content
        assert result.execution is None


@pytest.fixture
def public_dir():
    """A directory the sandbox user (uid 65534 when the tests run as root) can enter."""
    path = Path(tempfile.mkdtemp(prefix="sandbox-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_a_bubblewrap_that_cannot_create_namespaces_is_no_sandbox(store, context, monkeypatch, public_dir):
    # What Debian's bwrap prints when unprivileged user namespaces are switched off.
    fake = public_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{public_dir}:{os.environ['PATH']}")
    store.add("demo", files={"scripts/hello.py": "print('ran')\n"})

    result = run("run_skill", {"skill_name": "demo", "script": "hello.py"}, context)

    assert not result.ok
    assert "cannot create a sandbox" in result.content
    assert "No permissions to create new namespace" in result.content
    assert result.execution is None


def test_none_runs_scripts_unconfined_as_the_worker(store, context):
    store.add("demo", files={"scripts/who.py": "import os\nprint('uid', os.getuid())\n"})

    confined = run("run_skill", {"skill_name": "demo", "script": "who.py"}, context)
    unconfined = run("run_skill", {"skill_name": "demo", "script": "who.py"}, context, isolation=Isolation.NONE)

    assert "uid 65534" in confined.content
    assert f"uid {os.getuid()}" in unconfined.content


def test_the_setting_reaches_the_tool_registry(settings, store, context):
    from agents.turns.tools import tool_registry

    store.add("demo", files={"scripts/who.py": "import os\nprint('uid', os.getuid())\n"})
    arguments = {"skill_name": "demo", "script": "who.py"}

    settings.RUN_SKILL_SANDBOX = "none"
    unconfined = run_tool(tool_registry().get("run_skill"), arguments, context)
    settings.RUN_SKILL_SANDBOX = "bwrap"
    confined = run_tool(tool_registry().get("run_skill"), arguments, context)

    assert f"uid {os.getuid()}" in unconfined.content
    assert "uid 65534" in confined.content


@pytest.mark.parametrize("value", ["off", "docker", ""])
def test_an_unknown_setting_stops_the_start_up(value):
    env = {**os.environ, "RUN_SKILL_SANDBOX": value, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )

    assert started.returncode != 0
    assert "RUN_SKILL_SANDBOX must be 'bwrap' or 'none'" in started.stderr


def test_a_script_still_gets_its_bundle_its_arguments_and_a_clean_exit_code(store, context):
    files = [BundleFile("scripts/s.sh", b'#!/bin/sh\ncat references/r.txt; echo "$1"; exit 3\n', True)]
    files.append(BundleFile("references/r.txt", b"bundled\n", False))

    run_ = run_script(files, "scripts/s.sh", ["a b; rm -rf /"])

    assert run_.exit_code == 3 and not run_.ok
    assert run_.stdout == "bundled\na b; rm -rf /\n"


def test_the_start_up_check_warns_when_scripts_cannot_run_or_run_unconfined(settings, monkeypatch, tmp_path):
    from agents.checks import run_skill_sandbox_check

    assert [warning.id for warning in run_skill_sandbox_check(None)] == (
        [] if cgroups.cgroup_problem() is None else ["agents.W003"]
    )
    settings.RUN_SKILL_SANDBOX = "none"
    assert [warning.id for warning in run_skill_sandbox_check(None)] == ["agents.W002"]
    settings.RUN_SKILL_SANDBOX = "bwrap"
    monkeypatch.setenv("PATH", str(tmp_path))
    [warning] = run_skill_sandbox_check(None)
    assert warning.id == "agents.W001" and "no sandbox is available" in warning.msg
