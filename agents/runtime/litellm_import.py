"""litellm, imported once and only when first needed.

The import costs ~3 s and ~180 MB (SPEC §1), so the web process never pays it; workers pay it
before the pool forks (agents/tasks.py). The local cost map keeps the import off the network.
Both the call wrapper (llm.py) and the offline providers (providers.py) reach litellm here.
"""

from __future__ import annotations

import os
from functools import cache
from types import ModuleType


@cache
def litellm_module() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # heavy: imported on first use, never at module import

    litellm.suppress_debug_info = True  # its "Give Feedback" banner would land in worker logs
    return litellm
