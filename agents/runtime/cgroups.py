"""A control group per sandbox run: one bound on the memory and tasks of a run as a whole.

The rlimits in sandbox.py bound each process (address space, file size) but not their sum: 64
processes of 1 GiB each, SysV shared memory segments that outlive their creators, memfd files
and inodes are all memory the host pays for. A memory cgroup charges every page the run's
processes touch, kernel memory and shared memory included, and its OOM killer stops the run at
the limit; the pids controller bounds its tasks (threads included) whoever they run as.

Each run gets a group of its own, made beside the worker's own groups, named
`skill-run-<worker pid>-<random>`, and removed after the run. The child process joins it
before it becomes bubblewrap (see `RunCgroup.join`), so nothing the script does escapes it, and
checks that it is in it before anything runs.

cgroup v1 and v2 both work, as found in /proc/self/cgroup and /proc/self/mountinfo:
- v1: a group is made under the worker's own group in the memory and pids hierarchies (v1
  lets a group with processes have children), so the worker's own limits still apply above.
- v2: under the parent of the worker's own group (a v2 group with processes cannot pass
  controllers to children), which must have `memory` (and if it can, `pids`) in its
  cgroup.subtree_control: root, or a systemd unit with `Delegate=yes` one level below its
  parent (for example a user service under `user@.service`).
Where no group can be made (no permission, no memory controller), `cgroup_problem()` says why
and runs go on with the rlimits and the capped tmpfs only.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

logger = logging.getLogger(__name__)

GROUP_PREFIX = "skill-run-"

# This process's groups that were still busy when their run ended.
_left_behind: set[Path] = set()


@dataclass(frozen=True)
class _Place:
    """Where run groups are made for some controllers, and the files that set their limits."""

    directory: Path
    controllers: frozenset[str]  # of "memory" and "pids"
    version: int


@dataclass(frozen=True)
class RunCgroup:
    """The groups of one run: one per hierarchy (v1 keeps memory and pids apart), and an open
    `cgroup.procs` of each, opened by the worker before the fork."""

    directories: tuple[Path, ...]
    procs_fds: tuple[int, ...]
    oom_events: Path | None  # the memory group's counters, with a line "oom_kill <n>"

    def join(self) -> None:
        """Move the calling process into the run's groups; run in the child between fork and
        exec (preexec_fn), before it drops privileges, so the write is made with the worker's
        rights on every kernel. "0" means the writer itself; its children are born inside."""
        for fd in self.procs_fds:
            os.write(fd, b"0")
        # A write to an fd that no longer is the group's (closed and reused by another thread of
        # the worker between open and fork) would succeed and leave the run uncapped: the run
        # starts only once this process is seen in the run's group in every hierarchy.
        mine = [line.rpartition("/")[2] for line in Path("/proc/self/cgroup").read_text().splitlines()]
        for directory in self.directories:
            if directory.name not in mine:
                raise OSError(errno.ESRCH, f"this process is not in the run's cgroup {directory}")

    def oom_kills(self) -> int:
        """How many of the run's processes the kernel killed for the memory limit."""
        if self.oom_events is None:
            return 0
        for line in self.oom_events.read_text().splitlines():
            name, _, count = line.partition(" ")
            if name == "oom_kill":
                return int(count)
        return 0


def cgroup_problem() -> str | None:
    """Why runs get no cgroup on this machine, or None when they do (for start-up warnings)."""
    found = _places()
    return found if isinstance(found, str) else None


@cache
def _places() -> tuple[_Place, ...] | str:
    """The places run groups go, tried once per process by making a group in each."""
    try:
        own = _own_groups()
        mounts = _mounts()
    except OSError as error:
        return f"cannot read this process's cgroups ({error})"
    places: list[_Place] = []
    for controller in ("memory", "pids"):
        place = _place_for(controller, own, mounts)
        if isinstance(place, str):
            if controller == "memory":
                return place
            logger.info("skill runs get no pids cgroup: %s", place)
            continue
        if place.version == 2 and places and places[0].version == 2:
            places[0] = _Place(place.directory, places[0].controllers | place.controllers, 2)
        else:
            places.append(place)
    return tuple(places)


def _own_groups() -> dict[str, str]:
    """This process's group per controller ("" is the v2 hierarchy), from /proc/self/cgroup."""
    groups = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:
            groups[""] = path
        for controller in controllers.split(","):
            if controller:
                groups[controller] = path
    return groups


def _mounts() -> dict[str, tuple[str, str]]:
    """The cgroup file systems: controller ("" for v2) -> (mount root, mount point)."""
    mounts: dict[str, tuple[str, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        separator = fields.index("-")
        fs_type, options = fields[separator + 1], fields[separator + 3].split(",")
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        if fs_type == "cgroup2":
            mounts.setdefault("", (root, mount_point))
        elif fs_type == "cgroup":
            for option in options:
                mounts.setdefault(option, (root, mount_point))
    return mounts


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape")  # mountinfo writes a space as \040


def _place_for(controller: str, own: dict[str, str], mounts: dict[str, tuple[str, str]]) -> _Place | str:
    version = 1 if controller in own and controller in mounts else 2
    key = controller if version == 1 else ""
    if key not in own or key not in mounts:
        return f"no {controller} cgroup controller is mounted"
    root, mount_point = mounts[key]
    relative = os.path.relpath(own[key], root) if own[key].startswith(root) else None
    if relative is None or relative.startswith(".."):
        return f"this process's {controller} cgroup ({own[key]}) is outside the mounted tree ({mount_point})"
    group = Path(mount_point) / relative
    if version == 1:
        directory = group
    else:
        directory = group if relative == "." else group.parent
        if controller not in (directory / "cgroup.controllers").read_text().split():
            return f"the {controller} controller is not available to {directory} (cgroup v2)"
        if controller not in (directory / "cgroup.subtree_control").read_text().split():
            try:
                (directory / "cgroup.subtree_control").write_text(f"+{controller}")
            except OSError as error:
                return f"cannot enable the {controller} controller for {directory}'s children ({error.strerror})"
    place = _Place(directory, frozenset({controller}), version)
    try:  # a trial group: permissions and limit files are as a run will need them
        trial = _make(place, memory_bytes=64 * 1024 * 1024, processes=64)
    except OSError as error:
        return f"cannot make a {controller} cgroup in {directory} ({error.strerror or error})"
    _remove(trial)
    return place


def run_cgroup_create(*, memory_bytes: int, processes: int) -> RunCgroup | None:
    """Make the groups for one run, with its limits; None where this machine gives none."""
    places = _places()
    if isinstance(places, str):
        return None
    for directory in list(_left_behind):  # busy when their run ended; empty by now, usually
        if _remove(directory, patience=0):
            _left_behind.discard(directory)
    directories: list[Path] = []
    fds: list[int] = []
    oom_events = None
    try:
        for place in places:
            directories.append(_make(place, memory_bytes=memory_bytes, processes=processes))
            fds.append(os.open(directories[-1] / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
            if "memory" in place.controllers:
                oom_events = directories[-1] / ("memory.oom_control" if place.version == 1 else "memory.events")
    except OSError:
        run_cgroup_remove(RunCgroup(tuple(directories), tuple(fds), None))
        raise
    return RunCgroup(tuple(directories), tuple(fds), oom_events)


def _make(place: _Place, *, memory_bytes: int, processes: int) -> Path:
    directory = place.directory / f"{GROUP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    directory.mkdir()
    try:
        if "memory" in place.controllers:
            if place.version == 1:
                (directory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                # A child inherits a disabled OOM killer: its processes would hang at the limit.
                _write_if_present(directory / "memory.oom_control", "0")
                # With swap accounting on, memory and swap together: no paging out past the limit.
                _write_if_present(directory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            else:
                (directory / "memory.max").write_text(str(memory_bytes))
                _write_if_present(directory / "memory.swap.max", "0")
        if "pids" in place.controllers:
            (directory / "pids.max").write_text(str(processes))
    except OSError:
        _remove(directory)
        raise
    return directory


def _write_if_present(path: Path, value: str) -> None:
    if path.exists():
        path.write_text(value)


def run_cgroup_remove(cgroup: RunCgroup) -> None:
    """Close the run's files and remove its groups. The last processes of a sandbox may still
    be leaving for a moment after bubblewrap's own exit (the kernel is emptying its PID
    namespace), so removal is retried for a while; a group still busy after that is tried
    again by this process's next run, or by the reaper once this process is gone."""
    for fd in cgroup.procs_fds:
        os.close(fd)
    for directory in cgroup.directories:
        if not _remove(directory):
            _left_behind.add(directory)


def _remove(directory: Path, *, patience: float = 2.0) -> bool:
    deadline = time.monotonic() + patience
    pause = 0.001
    while True:
        try:
            directory.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() >= deadline:
                if patience:
                    logger.warning("could not remove the skill run's cgroup %s: %s", directory, error.strerror)
                return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def run_cgroups_sweep(*, process_exists: Callable[[int], bool]) -> int:
    """Remove the groups left by worker processes that no longer exist (killed during a run)."""
    places = _places()
    if isinstance(places, str):
        return 0
    removed = 0
    for place in places:
        for group in place.directory.glob(f"{GROUP_PREFIX}*"):
            pid = group.name.removeprefix(GROUP_PREFIX).partition("-")[0]
            # Only an empty group goes: one whose processes are still dying is busy until next time.
            if pid.isdigit() and not process_exists(int(pid)) and _remove(group, patience=0):
                removed += 1
    return removed
