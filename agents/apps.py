from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agent runtime"

    def ready(self) -> None:
        from agents import checks  # noqa: F401  (registers the run_skill sandbox check)
