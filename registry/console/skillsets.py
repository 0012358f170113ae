"""Skillsets in the console: the list, a set's page (members, labels, versions, label history),
one version, the diff between two versions (which members changed, and each one's own diff), the
publish form, and label moves, rollouts and rollback with the confirmation `production` asks for.

Reads go through registry/selectors/skillsets.py, writes through the services the API calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse

from registry import selectors
from registry.console.access import console_view
from registry.console.errors import flash_back, form_add_domain_error, on_domain_error
from registry.errors import ApplicationError
from registry.models import Skillset, SkillsetVersion
from registry.roles import ADMIN, acting_role, user_roles
from registry.selectors.skillsets import (
    MemberChange,
    skillset_detail,
    skillset_get,
    skillset_labels_held,
    skillset_list,
    skillset_member_rows,
    skillset_version_get,
    skillset_versions_diff,
)
from registry.selectors.versions import VersionDiff
from registry.services.audit import Actor
from registry.services.label_policies import LabelPolicyUnmet
from registry.services.skillsets import (
    DESCRIPTION_MAX,
    NOTE_MAX,
    skillset_label_delete,
    skillset_label_move,
    skillset_label_preview,
    skillset_label_rollback,
    skillset_publish,
    skillset_rollout_abort,
    skillset_rollout_set,
)

READ, WRITE = "skills:read", "skills:write"
# One member a line: `name: 3`, `name: production`, `name@3` or `name 3`.
MEMBER_LINE = re.compile(r"^\s*([A-Za-z0-9._-]+)\s*(?:[:@=]\s*|\s+)([A-Za-z0-9._-]+)\s*$")


def _actor(request) -> Actor:
    return Actor(user=request.user, via="console")


def _role(request) -> str:
    return acting_role(user_roles(request.user))


def _number(raw) -> int:
    if not str(raw).isdecimal():
        raise Http404("A version is a number.")
    return int(raw)


# --- list and publish ------------------------------------------------------------------------


@console_view(scope=READ)
def skillsets_list(request):
    return render(request, "registry/skillsets/list.html", {"rows": skillset_list()})


class SkillsetPublishForm(forms.Form):
    name = forms.CharField(max_length=64, required=False, help_text="Lowercase letters, digits and hyphens.")
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX, widget=forms.Textarea(attrs={"rows": 2}))
    members = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono", "spellcheck": "false"}),
        help_text="One member a line: the skill's name, then a version number or a label (taken as it points now).",
    )
    note = forms.CharField(required=False, max_length=NOTE_MAX, help_text="What this version changes.")

    def clean_members(self) -> dict[str, int | str]:
        """The lines as {name: number | label}; a line that is neither, or a name twice, is named."""
        members: dict[str, int | str] = {}
        for number, line in enumerate(self.cleaned_data["members"].splitlines(), start=1):
            if not line.strip():
                continue
            found = MEMBER_LINE.fullmatch(line)
            if found is None:
                raise forms.ValidationError(f"Line {number}: write `skill-name: version` or `skill-name: label`.")
            name, ref = found.groups()
            if name in members:
                raise forms.ValidationError(f"Line {number}: '{name}' is listed twice: a skill is in a set once.")
            members[name] = int(ref) if ref.isdecimal() else ref
        return members


def _members_text(version: SkillsetVersion | None) -> str:
    if version is None:
        return ""
    return "".join(f"{m.skill_name}: {m.skill_version_number}\n" for m in version.members.all())


@console_view(scope=WRITE)
def skillset_publish_page(request, name: str | None = None):
    """The publish form: a new set (no `name`), or the next version of one, filled with its
    newest members. A refusal comes back beside the field it names (a member's, on `members`)."""
    skillset = skillset_get(name=name) if name else None
    newest = skillset_version_get(skillset=skillset, number=skillset.latest_version) if skillset else None
    initial = {"name": name or "", "members": _members_text(newest)}
    if skillset is not None:
        initial["description"] = skillset.description
    form = SkillsetPublishForm(request.POST or None, initial=initial)
    context = {"form": form, "skillset": skillset}
    if request.method != "POST" or not form.is_valid():
        return render(request, "registry/skillsets/publish.html", context, status=400 if form.is_bound else 200)
    data = form.cleaned_data
    target = name or data["name"]

    def refused(error: ApplicationError):
        if any(field.startswith("members") for field in error.fields):  # the sentence names the member
            form.add_error("members", error.detail)
        else:
            form_add_domain_error(form, error)
        return render(request, "registry/skillsets/publish.html", context, status=error.status)

    on_domain_error(request, refused)
    version, created = skillset_publish(
        name=target,
        members=data["members"],
        description=data["description"],
        note=data["note"],
        actor=_actor(request),
    )
    if created:
        messages.success(request, f"Published {version.skillset.name} v{version.number}.")
    else:
        messages.info(request, f"Nothing new: {version.skillset.name} v{version.number} has these members.")
    return redirect(reverse("skillset-detail", args=[version.skillset.name]))


# --- a set, a version, a diff ----------------------------------------------------------------


@console_view(scope=READ)
def skillset_page(request, name: str):
    detail = skillset_detail(skillset_get(name=name))
    context = {"detail": detail, "skillset": detail.skillset, "labels": detail.labels}
    return render(request, "registry/skillsets/detail.html", context)


@console_view(scope=READ)
def skillset_version_page(request, name: str, number: str):
    skillset = skillset_get(name=name)
    version = skillset_version_get(skillset=skillset, number=_number(number))
    context = {"skillset": skillset, "version": version, "members": skillset_member_rows(version)}
    return render(request, "registry/skillsets/version.html", context)


@dataclass(frozen=True)
class MemberDiff:
    """A member's change with its own diff (for members changed to another version of a skill
    that still has both)."""

    change: MemberChange
    diff: VersionDiff | None


def _member_diffs(changes: list[MemberChange], old: SkillsetVersion, new: SkillsetVersion) -> list[MemberDiff]:
    before = {m.skill_name: m.skill_version for m in old.members.all()}
    after = {m.skill_name: m.skill_version for m in new.members.all()}
    shown = []
    for change in changes:
        a, b = before.get(change.name), after.get(change.name)
        diff = None
        if change.change == "changed" and a is not None and b is not None and a.skill_id == b.skill_id:
            diff = selectors.skill_version_diff(old=a, new=b)
        shown.append(MemberDiff(change=change, diff=diff))
    return shown


@console_view(scope=READ)
def skillset_diff_page(request, name: str):
    skillset = skillset_get(name=name)
    new_number = _number(request.GET.get("to") or skillset.latest_version)
    old_number = _number(request.GET.get("from") or max(new_number - 1, 1))
    old = skillset_version_get(skillset=skillset, number=old_number)
    new = skillset_version_get(skillset=skillset, number=new_number)
    changes = skillset_versions_diff(old=old, new=new)
    context = {
        "skillset": skillset,
        "old": old,
        "new": new,
        "numbers": range(skillset.latest_version, 0, -1),
        "members": _member_diffs(changes, old, new),
        "changed": sum(change.change != "same" for change in changes),
    }
    return render(request, "registry/skillsets/diff.html", context)


# --- labels ----------------------------------------------------------------------------------


@console_view(scope=WRITE)
def skillset_labels(request, name: str):
    """Move, roll out, abort, roll back or remove a set label, through the services the API
    calls. A move of `production` shows the confirmation first: each member's label before and
    after, with what its policy asks (the gate the move enforces); only Confirm writes."""
    skillset = skillset_get(name=name)
    page = reverse("skillset-detail", args=[skillset.name])
    if request.method != "POST":
        return redirect(page)
    label = request.POST.get("label", "").strip()
    action = request.POST.get("action", "move")
    actor, role = _actor(request), _role(request)

    def refused(error):
        if action == "delete" and role == ADMIN and isinstance(error, LabelPolicyUnmet):
            # evidence never vouches for a removal: an admin may remove it anyway, with a reason
            context = {"skillset": skillset, "label": label, "refusal": error}
            return render(request, "registry/skillsets/label_remove.html", context, status=error.status)
        return flash_back(request, f"{label or 'Label'} not changed: {error.detail}", default=page)

    on_domain_error(request, refused)
    reason = request.POST.get("override_reason", "").strip() or None
    if action == "delete":
        skillset_label_delete(skillset=skillset, label=label, actor=actor, role=role, override_reason=reason)
        messages.success(request, f"Removed label {label} from {skillset.name}; its members keep theirs.")
    elif action == "abort":
        skillset_rollout_abort(skillset=skillset, label=label, actor=actor)
        messages.success(request, f"Aborted the rollout of {label}: every subject reads the stable set again.")
    elif action == "rollback":
        back = skillset_label_rollback(skillset=skillset, label=label, actor=actor, role=role, override_reason=reason)
        messages.success(request, f"Rolled {label} back: it serves v{back.version.number}, members and all.")
    elif action == "rollout":
        number = _number(request.POST.get("version"))
        weight = request.POST.get("weight", "")
        skillset_rollout_set(
            skillset=skillset,
            label=label,
            version_number=number,
            weight=int(weight) if weight.isdecimal() else weight,  # the service names a bad one
            actor=actor,
            role=role,
            override_reason=reason,
        )
        messages.success(request, f"v{number} of {skillset.name} now serves {weight}% of {label}.")
    else:
        number = _number(request.POST.get("version"))
        if label == "production" and request.POST.get("confirm") != "1":
            return _confirm_page(request, skillset=skillset, label=label, number=number, role=role)
        skillset_label_move(
            skillset=skillset, label=label, version_number=number, actor=actor, role=role, override_reason=reason
        )
        messages.success(request, f"Moved {label} of {skillset.name} to v{number}, with its members' labels.")
    return redirect(page)


def _confirm_page(request, *, skillset: Skillset, label: str, number: int, role: str):
    target = skillset_version_get(skillset=skillset, number=number)
    moves = skillset_label_preview(skillset=skillset, label=label, version_number=number, role=role)
    current = skillset_labels_held(skillset).get(label)
    refusing = [move for move in moves if move.gate.status != "allowed"]
    context = {
        "skillset": skillset,
        "label": label,
        "target": target,
        "current": current,
        "moves": moves,
        "refusing": refusing,
        "changing": sum(move.changed for move in moves),
    }
    return render(request, "registry/skillsets/label_confirm.html", context)


urlpatterns = [
    path("skillsets/", skillsets_list, name="skillset-list"),
    path("skillsets/new/", skillset_publish_page, name="skillset-new"),
    path("skillsets/<str:name>/", skillset_page, name="skillset-detail"),
    path("skillsets/<str:name>/publish/", skillset_publish_page, name="skillset-publish"),
    path("skillsets/<str:name>/versions/<str:number>/", skillset_version_page, name="skillset-version"),
    path("skillsets/<str:name>/diff/", skillset_diff_page, name="skillset-diff"),
    path("skillsets/<str:name>/labels/", skillset_labels, name="skillset-labels"),
]
