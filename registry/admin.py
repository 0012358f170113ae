"""The Django admin: a window onto the registry, not a way around it.

Every registry write has a service that validates, locks, bumps the generation and audits it
(registry/services/). A ModelAdmin's default save would skip all of that — an "Add skill version"
once stored `not a skill` with a made-up fingerprint and wedged the skill. So the registry's
tables are read-only here; the few writes the admin keeps (enabling a skill, revoking a token,
editing accounts) call the same services as the console, API and CLI, as `via="django admin"`.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group

from registry import models
from registry.services.accounts import (
    account_deleted,
    account_password_set,
    account_saved,
    account_snapshot,
    group_deleted,
    group_saved,
)
from registry.services.audit import Actor
from registry.services.skills import skill_set_enabled
from registry.services.tokens import api_token_revoke


def admin_actor(request) -> Actor:
    return Actor(user=request.user, via="django admin")


class NoWrites:
    """No add, change or delete permission: Django then shows view-only pages."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyAdmin(NoWrites, admin.ModelAdmin):
    """Shown, searchable, never written, and so no bulk actions either."""

    actions: list[str] | None = None


class ReadOnlyInline(NoWrites, admin.TabularInline):
    extra = 0


class SkillFileInline(ReadOnlyInline):
    model = models.SkillFile
    fields = ("path", "size", "executable", "blob")


@admin.register(models.Skill)
class SkillAdmin(admin.ModelAdmin):
    """Skills are created by publishing; the admin may only switch one on or off (audited)."""

    list_display = ("name", "source", "enabled", "latest_version", "updated_at")
    list_filter = ("source", "enabled")
    search_fields = ("name",)
    fields = ("name", "source", "enabled", "latest_version", "created_by", "created_at", "updated_at")
    readonly_fields = ("name", "source", "latest_version", "created_by", "created_at", "updated_at")
    actions = None

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        if "enabled" in form.changed_data:
            skill_set_enabled(skill=obj, enabled=obj.enabled, actor=admin_actor(request))


@admin.register(models.SkillVersion)
class SkillVersionAdmin(ReadOnlyAdmin):
    # Versions are immutable and only `skill_version_publish` creates them.
    list_display = ("skill", "number", "name", "fingerprint", "author", "created_at")
    list_filter = ("skill__source",)
    search_fields = ("name", "description", "message")
    inlines = [SkillFileInline]


@admin.register(models.Label)
class LabelAdmin(ReadOnlyAdmin):
    # Labels move through `label_move` (console, API, `skills label`), which keeps their history.
    list_display = ("skill", "name", "version", "updated_by", "updated_at")
    search_fields = ("skill__name", "name")


@admin.register(models.LabelHistory)
class LabelHistoryAdmin(ReadOnlyAdmin):
    list_display = ("skill", "label", "kind", "from_version", "to_version", "weight", "changed_by", "changed_at")
    list_filter = ("kind",)
    search_fields = ("skill__name", "label")


@admin.register(models.LabelPolicy)
class LabelPolicyAdmin(ReadOnlyAdmin):
    # Policies change through `label_policy_set` (console, API), which checks and audits them.
    list_display = ("label", "roles", "require_eval", "guard", "updated_by", "updated_at")


@admin.register(models.ForceIncludeRule)
class ForceIncludeRuleAdmin(ReadOnlyAdmin):
    # Patterns are compiled, probed and audited by the rule services (console and API).
    list_display = ("name", "pattern", "priority", "enabled", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("name", "pattern")


@admin.register(models.UsageEvent)
class UsageEventAdmin(ReadOnlyAdmin):
    list_display = ("kind", "skill_name", "version", "trigger", "model", "source", "turn", "client_id", "at")
    list_filter = ("kind", "trigger", "source")
    search_fields = ("skill_name", "event_id", "client_id")
    date_hierarchy = "at"


@admin.register(models.AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "via", "action", "object_type", "object_repr")
    list_filter = ("action", "object_type")
    search_fields = ("object_repr",)


@admin.register(models.ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Tokens are created by `manage.py tokens create` or on the console's /tokens/ page (the
    secret is shown once there); the admin lists them and can revoke them."""

    list_display = ("name", "user", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
    exclude = ("secret_hash",)
    actions = ["revoke"]

    def has_revoke_permission(self, request) -> bool:
        return request.user.is_superuser

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request, queryset) -> None:
        names = list(queryset.values_list("name", flat=True))
        for name in names:
            api_token_revoke(name=name, actor=admin_actor(request))
        self.message_user(request, f"Revoked {len(names)} token(s).", messages.SUCCESS)


# --- accounts: Django's own screens, with every save and delete audited ---------------------

User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class AuditedUserAdmin(UserAdmin):
    """Roles are groups: a change of group, superuser or active flag changes what the user's
    tokens may do on their next request (registry/api/auth.py), and is audited here."""

    def save_model(self, request, obj, form, change) -> None:
        # Groups are saved after the user (save_related), so the "before" is taken now and the
        # audit row written once both are in.
        request._account_before = account_snapshot(User.objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        account_saved(user=form.instance, before=request._account_before, actor=admin_actor(request))

    def delete_model(self, request, obj) -> None:
        account_deleted(user=obj, actor=admin_actor(request))

    def delete_queryset(self, request, queryset) -> None:
        for user in queryset:
            account_deleted(user=user, actor=admin_actor(request))

    def user_change_password(self, request, id, form_url=""):
        # Django's own form sets the password; a redirect means it was saved.
        response = super().user_change_password(request, id, form_url)
        if request.method == "POST" and response.status_code == 302:
            account_password_set(user=User.objects.get(pk=id), actor=admin_actor(request))
        return response


@admin.register(Group)
class AuditedGroupAdmin(GroupAdmin):
    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        group_saved(group=form.instance, created=not change, actor=admin_actor(request))

    def delete_model(self, request, obj) -> None:
        group_deleted(group=obj, actor=admin_actor(request))

    def delete_queryset(self, request, queryset) -> None:
        for group in queryset:
            group_deleted(group=group, actor=admin_actor(request))
