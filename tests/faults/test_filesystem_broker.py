"""The embedded default's broker (config/broker.py) never hands a consumer half a message.

Kombu's filesystem transport writes a message into a file its consumer can already list, so a
consumer racing the writer could read it empty and stop the worker; ours renames the whole file
into place. A publisher and a consumer run at once on real folders with messages large enough
that a write takes time (Kombu's own transport loses a few of 300 here)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from queue import Empty

from kombu import Connection

from bench._services import ROOT

MESSAGES, SIZE = 300, 1_000_000


def _options(folder) -> dict:
    for name in ("out", "control"):
        (folder / name).mkdir()
    return {
        "data_folder_in": str(folder / "out"),
        "data_folder_out": str(folder / "out"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }


def test_a_consumer_racing_the_publisher_reads_every_message_whole(tmp_path):
    options = _options(tmp_path)
    read: list[str] = []
    failures: list[str] = []

    def consume() -> None:
        deadline = time.monotonic() + 240  # a busy machine writes 300 MB slowly
        with Connection(transport="config.broker:Transport", transport_options=options) as connection:
            queue = connection.SimpleQueue("turns")
            while len(read) + len(failures) < MESSAGES and time.monotonic() < deadline:
                try:
                    message = queue.get(timeout=1)
                except Empty:  # the publisher has not caught up: wait on
                    continue
                except Exception as error:  # a half-written file fails to decode here
                    failures.append(repr(error)[:200])
                    continue
                read.append(message.payload)
                message.ack()

    consumer = threading.Thread(target=consume)
    consumer.start()
    with Connection(transport="config.broker:Transport", transport_options=options) as connection:
        queue = connection.SimpleQueue("turns")
        for n in range(MESSAGES):
            queue.put(f"{n:06d}".ljust(SIZE, "x"))
    consumer.join(timeout=300)

    assert failures == []
    # Kombu orders by the millisecond sent, not within one: compare as sets
    assert sorted(payload[:6] for payload in read) == [f"{n:06d}" for n in range(MESSAGES)]
    assert {len(payload) for payload in read} == {SIZE}
    assert os.listdir(tmp_path / "out") == []  # no partial file left behind


def test_the_embedded_default_uses_it():
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    code = "from config.celery import app; print(app.connection_for_write().get_transport_cls())"
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert "config.broker.Transport" in shown.stdout, shown.stdout + shown.stderr
