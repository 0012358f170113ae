"""Turns and their traces in the admin, read-only: a turn changes state only through the runtime
and `agent_turn_cancel` (console and API), so the admin cannot corrupt a running turn's record."""

from django.contrib import admin

from agents import models
from registry.admin import ReadOnlyAdmin, ReadOnlyInline


class TraceEventInline(ReadOnlyInline):
    model = models.TraceEvent
    fields = ("seq", "type", "at", "data")


@admin.register(models.Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ("id", "title", "user", "created_at")


@admin.register(models.AgentTurn)
class AgentTurnAdmin(ReadOnlyAdmin):
    list_display = ("id", "status", "model", "forced_skill", "user", "steps", "created_at", "finished_at")
    list_filter = ("status", "model")
    search_fields = ("message", "answer")
    inlines = [TraceEventInline]
