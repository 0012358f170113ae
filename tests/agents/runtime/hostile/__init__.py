"""The hostile skill (escape.py) and the host-side checks that go with it.

`hostile_skill()` plants what the script goes after: a secret file in var/ (mode 0600, like
var/secret_key), paths to create in the app tree, in var/ and in the host's /tmp, a marker for
the detached child. `HostileSkill.escapes(output)` merges the script's own verdict with what the
host sees after the run (files that appeared, processes still alive) and returns the attempts
that got through, so a failing test names each one.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.agents.runtime.processes import wait_until_gone

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = Path(__file__).with_name("escape.py").read_bytes()
PORTS = {"postgres": 5432, "redis": 6379}
VERDICT_PREFIX = "VERDICT "

# Every attempt escape.py makes; a verdict missing one means the script stopped early.
ATTEMPTS = frozenset(
    {
        "own_environment",
        "worker_environ",
        "parent_environ",
        "any_environ",
        "read_secret_key",
        "read_app_source",
        "write_app_tree",
        "write_var",
        "write_host_tmp",
        "write_own_script",
        "tcp_postgres",
        "tcp_redis",
        "tcp_internet",
        "new_user_namespace",
        "unix_socket_postgres",
        "signal_worker",
        "signal_parent",
        "signal_everyone",
        "memory_2gib",
        "detached_child",
        "fork_bomb",
    }
)


@dataclass
class HostileSkill:
    worker_pid: int
    secrets: list[str]
    read: dict[str, Path]
    write: dict[str, Path]
    forks: int
    marker: str = field(default_factory=lambda: f"sandbox-escapee-{uuid.uuid4().hex}")

    def config(self) -> bytes:
        return json.dumps(
            {
                "worker_pid": self.worker_pid,
                "secrets": self.secrets,
                "read": {label: str(path) for label, path in self.read.items()},
                "write": {label: str(path) for label, path in self.write.items()},
                "ports": PORTS,
                "marker": self.marker,
                "forks": self.forks,
            }
        ).encode()

    def files(self, entry: str = "scripts/escape.py") -> dict[str, bytes]:
        return {entry: SCRIPT, "config.json": self.config()}

    def verdict(self, output: str) -> dict[str, list]:
        line = next((line for line in output.splitlines() if line.startswith(VERDICT_PREFIX)), None)
        assert line is not None, f"the hostile script printed no verdict:\n{output}"
        verdict = json.loads(line.removeprefix(VERDICT_PREFIX))
        assert set(verdict) == ATTEMPTS, f"attempts missing from the verdict: {sorted(ATTEMPTS - set(verdict))}"
        return verdict

    def escapes(self, output: str, *, outlives_seconds: float = 15.0) -> dict[str, str]:
        """Attempts that got through, each with what it achieved: the script's word, then the host's.

        The detached grandchild escaped if it is still there after `outlives_seconds`: a
        confined run must be given the kernel's worst teardown time; an unconfined one, whose
        grandchild sleeps for ten minutes, needs only a moment to be seen still running."""
        verdict = self.verdict(output)
        escaped = {name: detail for name, (got_through, detail) in verdict.items() if got_through}
        for label, path in self.write.items():
            if path.exists():
                escaped[f"write_{label}"] = f"{path} exists on the host"
        if not wait_until_gone(self.marker, timeout=outlives_seconds):
            escaped["detached_child"] = "the double-forked setsid grandchild outlived the run (killed by the test)"
        return escaped

    def cleanup(self) -> None:
        for path in [*self.read.values(), *self.write.values()]:
            if path.name.startswith("sandbox-"):  # only what hostile_skill() planted
                path.unlink(missing_ok=True)


@contextmanager
def hostile_skill(worker_pid: int, *, var_dir: Path, secrets: list[str], forks: int = 1000) -> Iterator[HostileSkill]:
    token = uuid.uuid4().hex
    var_dir.mkdir(parents=True, exist_ok=True)
    secret = var_dir / f"sandbox-secret-{token}"
    secret.write_text(f"secret-{token}")
    secret.chmod(0o600)
    skill = HostileSkill(
        worker_pid=worker_pid,
        secrets=secrets,
        read={"secret_key": secret, "app_source": ROOT / "config" / "settings.py"},
        write={
            "app_tree": ROOT / f"sandbox-escape-{token}",
            "var": var_dir / f"sandbox-escape-{token}",
            "host_tmp": Path(tempfile.gettempdir()) / f"sandbox-escape-{token}",
        },
        forks=forks,
    )
    try:
        yield skill
    finally:
        skill.cleanup()
