from django.apps import AppConfig
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import m2m_changed, post_delete, post_save


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "Skill registry"

    def ready(self) -> None:
        from registry import checks  # noqa: F401  (registers the start-up checks)
        from registry.api.rate import parse_rate
        from registry.models import ApiToken
        from registry.readmodel.generation import tokens_changed

        parse_rate(settings.API_THROTTLE_RATE)  # a malformed rate stops the start-up, not the first request

        # Whoever revokes a token or deactivates an account here is refused on their next request
        # at once, without waiting for the change notification (registry/readmodel/generation.py).
        for model in (ApiToken, settings.AUTH_USER_MODEL, "auth.Group"):
            post_save.connect(tokens_changed, sender=model, dispatch_uid=f"tokens_changed_save_{model}")
            post_delete.connect(tokens_changed, sender=model, dispatch_uid=f"tokens_changed_delete_{model}")
        # A token is cut to its owner's role on every request: a role (group) given or taken counts too.
        membership = get_user_model().groups.through
        m2m_changed.connect(tokens_changed, sender=membership, dispatch_uid="tokens_changed_membership")
