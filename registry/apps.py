from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_delete, post_save


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "Skill registry"

    def ready(self) -> None:
        from registry.models import ApiToken
        from registry.services.generation import tokens_changed

        # Whoever revokes a token or deactivates an account here is refused on their next request
        # at once, without waiting for the change notification (registry/services/generation.py).
        for model in (ApiToken, settings.AUTH_USER_MODEL):
            post_save.connect(tokens_changed, sender=model, dispatch_uid=f"tokens_changed_save_{model}")
            post_delete.connect(tokens_changed, sender=model, dispatch_uid=f"tokens_changed_delete_{model}")
