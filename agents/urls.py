from django.urls import path

from agents.turns import api

urlpatterns = [
    path("turns", api.AgentTurnListCreateApi.as_view(), name="agent-turn-create"),
    path("turns/causes", api.AgentTurnCausesApi.as_view(), name="agent-turn-causes"),
    path("turns/<uuid:turn_id>", api.AgentTurnDetailApi.as_view(), name="agent-turn-detail"),
    path("turns/<uuid:turn_id>/feedback", api.AgentTurnFeedbackApi.as_view(), name="agent-turn-feedback"),
    path("turns/<uuid:turn_id>/cancel", api.AgentTurnCancelApi.as_view(), name="agent-turn-cancel"),
]
