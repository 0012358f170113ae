"""Kombu's filesystem transport (the embedded default's broker), publishing each message whole.

Kombu's own `_put` creates the message's file, then locks and writes it; its `_get` takes no lock:
it moves the first file it lists away and reads it. A consumer that lists the file between the
two steps reads it empty and fails to decode it, which stops the worker (seen under `make run`
with four API clients queueing turns). Here a message is written to a hidden file in the queue's
folder and renamed into place: a rename within one folder is atomic, so a consumer lists the
whole message or nothing, and `_get` and `_size` skip the hidden name (its text after the first
dot is not `<queue>.msg`).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from contextlib import suppress
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        # Kombu's name: the millisecond first, so `_get`'s sorted listing is the order sent.
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        handle, partial = tempfile.mkstemp(prefix=".", suffix=".partial", dir=self.data_folder_out)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(dumps(payload).encode())
            os.replace(partial, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            with suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add a message to {self.data_folder_out!r}") from exc


class Transport(filesystem.Transport):
    Channel = Channel
