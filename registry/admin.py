from django.contrib import admin

from registry import models


class SkillFileInline(admin.TabularInline):
    model = models.SkillFile
    fields = ("path", "size", "executable", "blob")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(models.Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ("name", "source", "enabled", "latest_version", "updated_at")
    list_filter = ("source", "enabled")
    search_fields = ("name",)
    readonly_fields = ("latest_version",)


@admin.register(models.SkillVersion)
class SkillVersionAdmin(admin.ModelAdmin):
    # Versions are immutable: the admin shows them but never edits them.
    list_display = ("skill", "number", "name", "fingerprint", "author", "created_at")
    list_filter = ("skill__source",)
    search_fields = ("name", "description", "message")
    inlines = [SkillFileInline]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.Label)
class LabelAdmin(admin.ModelAdmin):
    list_display = ("skill", "name", "version", "updated_by", "updated_at")
    search_fields = ("skill__name", "name")


@admin.register(models.LabelHistory)
class LabelHistoryAdmin(admin.ModelAdmin):
    list_display = ("skill", "label", "from_version", "to_version", "changed_by", "changed_at")
    search_fields = ("skill__name", "label")


@admin.register(models.ForceIncludeRule)
class ForceIncludeRuleAdmin(admin.ModelAdmin):
    list_display = ("name", "pattern", "priority", "enabled", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("name", "pattern")


@admin.register(models.UsageEvent)
class UsageEventAdmin(admin.ModelAdmin):
    list_display = ("kind", "skill_name", "version", "trigger", "turn", "client_id", "at")
    list_filter = ("kind", "trigger")
    search_fields = ("skill_name", "event_id", "client_id")
    date_hierarchy = "at"


@admin.register(models.AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("at", "actor", "via", "action", "object_type", "object_repr")
    list_filter = ("action", "object_type")
    search_fields = ("object_repr",)

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
    exclude = ("secret_hash",)
    readonly_fields = ("prefix", "created_at", "last_used_at")
