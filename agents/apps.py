from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agent runtime"

    def ready(self) -> None:
        from agents import checks  # registers the run_skill sandbox check

        checks.agent_model_settings_check()
