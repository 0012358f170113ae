from django.contrib import admin

from agents import models


class TraceEventInline(admin.TabularInline):
    model = models.TraceEvent
    fields = ("seq", "type", "at", "data")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(models.Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "user", "created_at")


@admin.register(models.AgentTurn)
class AgentTurnAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "model", "forced_skill", "user", "steps", "created_at", "finished_at")
    list_filter = ("status", "model")
    search_fields = ("message", "answer")
    inlines = [TraceEventInline]
