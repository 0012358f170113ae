"""The Celery app; task defaults live in settings under the CELERY_ namespace."""

import os
from typing import Any

from celery import Celery, Task

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class WorkerTimedTask(Task):
    """A task whose time limits the worker decides. Celery copies a task's limits (its decorator's,
    or else the sending process's CELERY_TASK_*TIME_LIMIT) into every message, and a worker obeys a
    message's limits over its own: the web process's configuration would cut the workers' tasks.
    Sent without them, a task runs under the limits its worker was configured with. A caller may
    still pass explicit ones to `apply_async`."""

    def apply_async(self, args: Any = None, kwargs: Any = None, *positional: Any, **options: Any) -> Any:
        options.setdefault("time_limit", None)
        options.setdefault("soft_time_limit", None)
        return super().apply_async(args, kwargs, *positional, **options)


app = Celery("skill_registry", task_cls=WorkerTimedTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
