"""Force-include rules as the API reads them (the console's rule pages have their own module)."""

from __future__ import annotations

from registry.errors import NotFound
from registry.models import ForceIncludeRule


def rule_list() -> list[ForceIncludeRule]:
    """Every rule, highest priority first."""
    return list(ForceIncludeRule.objects.order_by("-priority", "name"))


def rule_get(*, rule_id: int) -> ForceIncludeRule:
    rule = ForceIncludeRule.objects.filter(pk=rule_id).first()
    if rule is None:
        raise NotFound(f"No rule with id {rule_id}.")
    return rule
