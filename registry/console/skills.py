"""Skills in the console: list, skill page, editor (live validation, conflict screen), bundle
files, versions, diff, labels and rollback (SPEC §7).

Reads go through `registry.selectors`, writes through the same services the API calls, with
the console as the actor's channel. A service's ApplicationError becomes a flash message or a
form re-rendered with the problem next to it, with the error's HTTP status.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from types import SimpleNamespace

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import urlencode
from django_htmx.http import HttpResponseClientRedirect

from registry import selectors
from registry.api.serializers import PUBLISH_SOURCES, PublishSourceField
from registry.console.access import console_view, user_scopes
from registry.console.errors import flash_back, on_domain_error
from registry.errors import ApplicationError, LenientReadingRefused, NameTaken, VersionConflict
from registry.models import EvalRun, Skill, SkillSource, SkillVersion
from registry.roles import ADMIN, acting_role, user_roles
from registry.selectors.analytics import AnalyticsFilter, SkillStats, skill_analytics
from registry.selectors.attestations import version_signatures
from registry.selectors.capabilities import version_capabilities_diff
from registry.selectors.catalog_routing import description_overlaps
from registry.selectors.dependencies import skill_required_by, version_requirements
from registry.selectors.evals import eval_latest_per_version
from registry.selectors.label_policies import label_policy_list
from registry.selectors.resolve import render_prompt_block
from registry.selectors.rollouts import (
    rollouts_active_by_skill,
    skill_rollbacks,
    skill_rollout_panels,
    skill_rollouts,
)
from registry.selectors.scans import scans_latest, version_scan_view
from registry.services.audit import Actor
from registry.services.label_policies import NEW_CAPABILITIES, LabelGate, label_gate, label_gates, label_policy_enforce
from registry.services.labels import IMPLICIT_LABEL, LABEL_NAME, label_delete, label_move, label_name_check
from registry.services.rollouts import label_rollout_abort, label_rollout_set
from registry.services.skills import (
    ACCEPT_HINT,
    PublishResult,
    SkillMdCheck,
    registry_limits,
    skill_file_delete,
    skill_file_set_executable,
    skill_files_add,
    skill_md_check,
    skill_md_publish,
    skill_set_enabled,
    skill_version_publish,
)
from registry.services.usage import usage_offers_roll_up
from registry.skillformat.bundle import Bundle, read_picked_folder, read_zip
from registry.skillformat.rendering import render_markdown
from registry.skillformat.skill_templates import KINDS, PROMPT, skill_template
from registry.skillformat.skillmd import KNOWN_TRIGGERS, Issue
from registry.skillformat.token_count import count_tokens

READ, WRITE = "skills:read", "skills:write"
PAGE_SIZE = 50
OVERLAPS_SHOWN = 3  # the editor names the most similar skills, not every one above the threshold
SORTS = {
    "name": ("Name", lambda row: row.skill.name),
    "updated": ("Recently updated", lambda row: -row.skill.updated_at.timestamp()),
    "versions": ("Most versions", lambda row: -row.skill.latest_version),
}


def _actor(request) -> Actor:
    return Actor(user=request.user, via="console")


def _skill(request, name: str) -> Skill:
    """The skill a page is about: the effective one for `name`, or `?source=` for a shadowed one."""
    source = request.POST.get("source") or request.GET.get("source") or None
    if source is not None and source not in SkillSource.values:
        raise Http404(f"Unknown source '{source}'.")
    skill, others = selectors.skill_with_others(name=name, source=source)  # NotFound: the 404 page
    setattr(skill, "others", others)  # noqa: B010 - read by _page_context: a query less on every page
    return skill


def _version(skill: Skill, number) -> SkillVersion:
    if not str(number).isdecimal():
        raise Http404("A version is a number.")
    return selectors.skill_version_for(skill=skill, number=int(number), label="latest")


def _skill_url(skill: Skill, view: str = "skill-detail") -> str:
    """A skill page's URL, with `?source=` when the skill is not the one its name resolves to."""
    return reverse(view, args=[skill.name]) + _page_context(skill)["qs"]


# --- list ----------------------------------------------------------------------------------


class SkillFilterForm(forms.Form):
    q = forms.CharField(required=False)  # cut to 200 characters rather than dropped
    source = forms.ChoiceField(required=False, choices=[("", "Any source"), *SkillSource.choices])
    tag = forms.CharField(required=False, max_length=100)
    trigger = forms.ChoiceField(required=False, choices=[("", "Any trigger"), *((t, t) for t in KNOWN_TRIGGERS)])
    label = forms.RegexField(required=False, regex=r"^[a-z0-9_.-]{1,36}$", max_length=36)
    enabled = forms.ChoiceField(
        required=False, choices=[("", "Enabled or not"), ("yes", "Enabled"), ("no", "Disabled")]
    )
    sort = forms.ChoiceField(required=False, choices=[(key, title) for key, (title, _) in SORTS.items()])


@console_view(scope=READ)
def skill_list(request):
    form = SkillFilterForm(request.GET)
    form.is_valid()  # invalid filters are dropped (cleaned_data keeps the valid ones)
    query = form.cleaned_data
    enabled = {"yes": True, "no": False}.get(query.get("enabled") or "")
    rows = selectors.skill_catalog(
        q=(query.get("q") or "")[:200],
        tag=query.get("tag") or None,
        trigger=query.get("trigger") or None,
        source=query.get("source") or None,
        enabled=enabled,
        label=query.get("label") or None,
        shadowed=True,  # shadowed skills are listed as such, never hidden (seed 002)
    )
    sort = query.get("sort") or ("" if query.get("q") else "name")
    if sort:  # with a search and no explicit sort, rows stay in relevance order
        rows.sort(key=SORTS[sort][1])
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    params = {key: value for key, value in request.GET.items() if key != "page" and value}
    context = {
        "form": form,
        "page": page,
        "params": urlencode(params),
        "filtered": bool(params),
        "canaries": rollouts_active_by_skill([row.skill.pk for row in page.object_list]),
    }
    context["scans"] = scans_latest(row.version.pk for row in page.object_list)
    template = "registry/skills/list.html#skill-table" if request.htmx else "registry/skills/list.html"
    return render(request, template, context)


# --- skill page ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Shadowing:
    winner: Skill | None
    others: list[Skill]


def _page_context(skill: Skill) -> dict:
    """What every page about one skill shows in its header: precedence, and `qs` (the
    `?source=` that keeps links on this skill when its name resolves to another source)."""
    others = getattr(skill, "others", None)
    if others is None:
        others = selectors.skill_others(skill)
    winner = selectors.skill_winner([skill, *others])
    resolved = winner or max([skill, *others], key=lambda s: s.priority)
    return {
        "skill": skill,
        "shadowing": Shadowing(winner=winner, others=others),
        "qs": "" if resolved.pk == skill.pk else f"?source={skill.source}",
        "rollbacks": skill_rollbacks(skill),  # the guard's banner
    }


@lru_cache(maxsize=256)
def _body_html(body: str) -> str:
    """The rendered Markdown body. Versions are immutable, so a stored body renders once per
    process (rendering costs more than the rest of the page)."""
    return render_markdown(body)


@console_view(scope=READ)
def skill_detail(request, name: str):
    """By default the version agents and API readers get when they name no label (what
    `GET /api/v1/skills/{name}` serves), with the latest beside it when that is newer."""
    skill = _skill(request, name)
    served = selectors.skill_version_for(skill=skill)
    version = _version(skill, request.GET["version"]) if "version" in request.GET else served
    labels = selectors.skill_labels(skill)
    usage_offers_roll_up()
    usage = next(iter(skill_analytics(filters=AnalyticsFilter(skill=skill.name, skill_source=skill.source))), None)
    evals = _version_evals(skill)
    api_url = request.build_absolute_uri(reverse("api-skill-md", args=[skill.name]))
    canaries = {label.name: label for label in skill_rollouts(skill) if label.rollout_active}
    context = {
        **_page_context(skill),
        "version": version,
        "labels": labels,
        # Label name -> its running rollout, so "served" never hides the share a canary gets.
        "canaries": canaries,
        "canary_numbers": {label.canary_number for label in canaries.values()},
        "version_labels": sorted(name for name, number in labels.items() if number == version.number),
        "served": served,
        "served_by": "production" if labels.get("production") == served.number else "latest",
        "latest_labels": sorted(name for name, number in labels.items() if number == skill.latest_version),
        "files": selectors.version_files(version),
        "body_html": _body_html(version.body),
        "frontmatter": _frontmatter_rows(version.frontmatter),
        "usage": usage,
        "version_evals": evals,
        "curl": f'curl -H "Authorization: Bearer $SKILL_REGISTRY_TOKEN" {api_url}',
        "is_latest": version.number == skill.latest_version,
        "is_served": version.number == served.number,
        "signatures": version_signatures(version=version),
        "scan_view": version_scan_view(version),
        "requirements": version_requirements(version),
        "required_by": skill_required_by(name=skill.name),
    }
    return render(request, "registry/skills/detail.html", context)


@dataclass(frozen=True)
class VersionEval:
    """One version's newest finished eval run beside its live success rate, newest version first."""

    number: int
    run: EvalRun | None
    live: SkillStats | None


def _version_evals(skill: Skill) -> list[VersionEval]:
    """Every version that has an eval result or live outcomes (none when neither exists)."""
    latest = eval_latest_per_version(skill=skill)
    live = {
        stats.version: stats
        for stats in skill_analytics(
            filters=AnalyticsFilter(skill=skill.name, skill_source=skill.source), by_version=True
        )
        if stats.version is not None and stats.n
    }
    numbers = sorted(set(latest) | set(live), reverse=True)
    return [VersionEval(number, latest.get(number), live.get(number)) for number in numbers]


def _frontmatter_rows(frontmatter: dict) -> list[tuple[str, str]]:
    def shown(value) -> str:
        if isinstance(value, list):
            return ", ".join(map(str, value))
        if isinstance(value, dict):
            return "; ".join(f"{key}: {item}" for key, item in value.items())
        return str(value)

    return [(str(key), shown(value)) for key, value in frontmatter.items()]


@console_view(scope=READ)
def skill_file(request, name: str, file_path: str):
    skill = _skill(request, name)
    version = _version(skill, request.GET.get("version", skill.latest_version))
    item = selectors.version_file(version, file_path)  # NotFound: the 404 page
    lines = selectors.text_lines(bytes(item.blob.content))
    lines = None if lines is None else [line.rstrip("\r\n") for line in lines]
    context = {"skill": skill, "version": version, "file": item, "lines": lines}
    return render(request, "registry/skills/file.html", context)


# --- editor --------------------------------------------------------------------------------


class PublishForm(forms.Form):
    skill_md = forms.CharField(strip=False)  # the parser judges its size, with a line number
    message = forms.CharField(required=False, max_length=500)
    base_version = forms.IntegerField(min_value=0)
    template = forms.ChoiceField(required=False, choices=[("", "")] + list(KINDS.items()))
    accept_lenient = forms.BooleanField(required=False)  # the "Publish as read" button
    read_sha256 = forms.CharField(required=False, max_length=64)  # the text that step showed


def _from_textarea(text: str, *, like: str = "") -> str:
    """Browsers send a textarea's lines joined by CRLF; keep the line endings the skill had
    (LF unless the version being edited used CRLF), so an unchanged text stays unchanged."""
    text = text.replace("\r\n", "\n")
    return text.replace("\n", "\r\n") if "\r\n" in like else text


# Service messages tell API callers which field to send; in the console the advice is what to
# do on this page.
_CONSOLE_ADVICE = (
    (
        re.compile(re.escape(ACCEPT_HINT)),
        "Fix the YAML, or accept this reading: Publish shows what would be stored, with a Publish as read button.",
    ),
    (
        re.compile(r" A new version of it is published from the version you read \([^)]*\)\."),
        "",
    ),
)


def console_advice(issue: Issue) -> Issue:
    """The issue with the API's advice replaced by the console's."""
    message = issue.message
    for api_advice, advice in _CONSOLE_ADVICE:
        message = api_advice.sub(advice, message)  # the advice has no backslashes
    return issue if message == issue.message else replace(issue, message=message)


class LiveCheck:
    """What the editor shows beside the text: problems by line (computed at once), and the
    preview (computed when a template asks for it: the problems fragment never pays for it)."""

    def __init__(self, check: SkillMdCheck, *, taken: SkillVersion | None = None) -> None:
        issues = map(console_advice, check.issues)
        self.issues = sorted(issues, key=lambda issue: (issue.line, issue.level != "error"))
        self.parsed = check.parsed
        self.taken = taken  # creating: the newest version of the skill that has the name already

    @property
    def errors(self) -> int:
        return sum(1 for issue in self.issues if issue.level == "error") + (self.taken is not None)

    @property
    def warnings(self) -> int:
        return sum(1 for issue in self.issues if issue.level != "error")

    @cached_property
    def body_html(self) -> str:
        return render_markdown(self.parsed.body) if self.parsed else ""

    @cached_property
    def description_tokens(self) -> int:
        return count_tokens(self.parsed.description) if self.parsed else 0

    @cached_property
    def body_tokens(self) -> int:
        return count_tokens(self.parsed.body) if self.parsed else 0

    @cached_property
    def prompt_entry(self) -> str:
        if self.parsed is None:
            return ""
        entry = SimpleNamespace(name=self.parsed.name, description=self.parsed.description)
        return render_prompt_block([entry], max_skills=1, max_chars=10**9).text


def live_check(text: str, *, expected_name: str | None = None, creating: bool = False) -> LiveCheck:
    """The checks a publish of `text` makes (`skill_md_check`, the one function both call): what
    this calls an error is refused by Publish, what it calls a warning is published. Creating,
    a name a user skill has already is one too (the publish would be refused as taken)."""
    check = skill_md_check(skill_md=text, expected_name=expected_name)
    if check.parsed is not None:
        check = replace(check, issues=(*check.issues, *_overlap_warnings(check.parsed)))
    name = check.reading.name if creating and check.reading else None
    return LiveCheck(check, taken=selectors.skill_name_holder(name=name, source=SkillSource.USER) if name else None)


def _overlap_warnings(parsed) -> list[Issue]:
    """A warning per served skill whose terms compete with this SKILL.md's (the routing report's
    overlap, docs/analysts/catalog-routing.md): agents shown both may take either for the other's
    queries. Only the editor says so; a publish is not refused for it."""
    line = parsed.field_lines.get("description", 1)
    return [
        Issue(
            "warning",
            line,
            f"The description overlaps the skill '{overlap['skill']}' (similarity {overlap['score']:.2f}; shared "
            f"terms: {', '.join(overlap['shared_terms'])}): an agent offered both may pick either. Say what sets "
            "this skill apart, or when to use the other.",
            "description",
        )
        for overlap in description_overlaps(draft=parsed)[:OVERLAPS_SHOWN]
    ]


@dataclass(frozen=True)
class StoredField:
    key: str
    line: int | None
    value: str  # as stored: text as is, anything else as JSON
    notes: list[str]  # how the fallback read it, when it did


@dataclass(frozen=True)
class AsRead:
    """The "Publish as read" step: each field as a publish with the reading accepted stores it,
    and the digest of the text it shows (accepting publishes that text, never a later edit)."""

    fields: list[StoredField]
    other_notes: list[str]  # fallback notes not about one field (an ignored line)
    registry_fields: list[tuple[str, str]]  # what the registry reads: tags, triggers, tools
    text_sha256: str


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _as_read(text: str, *, expected_name: str | None) -> AsRead | None:
    reading = skill_md_check(skill_md=text, expected_name=expected_name, accept_lenient=True).parsed
    if reading is None:
        return None
    notes: dict[str | None, list[str]] = {}
    for issue in reading.warnings:
        if issue.fallback:
            key = issue.field if issue.field in reading.frontmatter else None
            notes.setdefault(key, []).append(f"line {issue.line}: {issue.message}")

    def shown(value) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def listed(items: list[str]) -> str:
        return json.dumps(items, ensure_ascii=False) if items else "[] (none)"

    return AsRead(
        fields=[
            StoredField(key, reading.field_lines.get(key), shown(value), notes.get(key, []))
            for key, value in reading.frontmatter.items()
        ],
        other_notes=notes.get(None, []),
        registry_fields=[
            ("tags", listed(reading.tags)),
            ("triggers", listed(reading.triggers)),
            ("tools", listed(reading.tools)),
        ],
        text_sha256=_text_sha256(text),
    )


def _error_issues(exc: ApplicationError) -> list[Issue]:
    listed = [Issue(**issue) for issue in exc.extra.get("issues", []) if issue.get("level") == "error"]
    return [console_advice(issue) for issue in listed or [Issue(level="error", line=exc.line or 0, message=exc.detail)]]


@console_view(scope=WRITE)
def skill_new(request):
    kind = request.GET.get("template") or PROMPT
    template = skill_template(kind if kind in KINDS else PROMPT, name="my-new-skill")
    return _editor(request, skill=None, initial_text=template.skill_md, base_version=0, kind=kind)


@console_view(scope=WRITE)
def skill_edit(request, name: str):
    skill = _skill(request, name)
    latest = selectors.skill_version_for(skill=skill, label="latest")
    return _editor(request, skill=skill, initial_text=latest.skill_md, base_version=latest.number, kind="")


def _editor(request, *, skill: Skill | None, initial_text: str, base_version: int, kind: str) -> HttpResponse:
    """GET: the editor. POST with `check=problems` or `check=preview` (htmx, as you type): that
    fragment of the page. POST: publish."""
    expected_name = skill.name if skill else None
    editor_url = request.path + (f"?{urlencode({'source': skill.source})}" if skill else "")
    context: dict = {"skill": skill, "kinds": KINDS, "kind": kind, "message": "", "editor_url": editor_url}

    def check_of(text: str) -> LiveCheck:
        return live_check(text, expected_name=expected_name, creating=skill is None)

    if request.method != "POST":
        context.update(text=initial_text, base_version=base_version, check=check_of(initial_text))
        page = "registry/skills/edit.html" if skill else "registry/skills/new.html"  # new.html adds the upload
        return render(request, page, context)

    form = PublishForm(request.POST)
    text = _from_textarea(request.POST.get("skill_md", ""), like=initial_text)
    fragment = request.POST.get("check")
    if request.htmx and fragment in ("problems", "preview"):
        check = check_of(text)
        return render(request, f"registry/skills/edit.html#{fragment}", {"check": check, "editor_url": editor_url})

    context.update(text=text, message=request.POST.get("message", "")[:500], base_version=base_version)
    if not form.is_valid():
        context["check"] = check_of(text)
        context["form_errors"] = form.errors
        return render(request, "registry/skills/edit.html", context, status=400)
    context["base_version"] = form.cleaned_data["base_version"]
    # "Publish as read" accepts the reading of the text it showed: an edit made since is shown first.
    accept_lenient = form.cleaned_data["accept_lenient"] and form.cleaned_data["read_sha256"] == _text_sha256(text)
    on_domain_error(request, lambda error: _refused(request, context, error, text=text, check=check_of(text)))
    result = skill_md_publish(
        skill=skill,
        skill_md=text,
        base_version=form.cleaned_data["base_version"],
        template=form.cleaned_data.get("template") or PROMPT,
        message=form.cleaned_data["message"] or ("Created in the console" if skill is None else ""),
        accept_lenient=accept_lenient,
        actor=_actor(request),
    )
    _flash_publish(request, result)
    return redirect(_skill_url(result.skill))


def _refused(request, context: dict, error: ApplicationError, *, text: str, check: LiveCheck) -> HttpResponse:
    """The editor again, the text kept: a conflict with the diff from theirs, any other problem
    (a name taken, beside the link to that skill) beside its line."""
    context["check"] = check
    if isinstance(error, VersionConflict) and context["skill"] is not None:
        return _conflict(request, context, error, text=text)
    context["publish_errors"] = _error_issues(error)
    if isinstance(error, LenientReadingRefused):
        context["as_read"] = _as_read(text, expected_name=context["skill"].name if context["skill"] else None)
    return render(request, "registry/skills/edit.html", context, status=error.status)


def _conflict(request, context: dict, exc: VersionConflict, *, text: str) -> HttpResponse:
    """HTTP 409 on an edit of a skill someone published meanwhile: their newest version, the diff
    from it to the user's text (kept in the editor), and a Publish button whose base is their
    version, for once the user has looked."""
    theirs = selectors.skill_version_for(skill=context["skill"], label="latest")
    context.update(
        conflict=SimpleNamespace(
            detail=exc.detail,
            theirs=theirs,
            diff=selectors.unified_diff(theirs.skill_md, text, from_name=f"theirs (v{theirs.number})", to_name="yours"),
        ),
        base_version=theirs.number,
    )
    return render(request, "registry/skills/edit.html", context, status=409)


def _flash_publish(request, result: PublishResult) -> None:
    version = result.version
    if result.created:
        messages.success(request, f"Published {version.skill.name} v{version.number}.")
    else:
        messages.info(request, f"Nothing to publish: identical to {version.skill.name} v{version.number}.")
    for issue in result.warnings[:5]:
        messages.warning(request, f"line {issue.line}: {issue.message}")


# --- bundle files --------------------------------------------------------------------------


@console_view(scope=WRITE)
def skill_files(request, name: str):
    """Upload files or a zip, delete a file, toggle the executable bit: each a new version."""
    if request.method != "POST":
        return redirect(reverse("skill-detail", args=[name]))
    skill = _skill(request, name)
    action = request.POST.get("action", "")
    base_version = request.POST.get("base_version", "")
    if not base_version.isdecimal():
        messages.error(request, "The form lost its base version; reload the page and try again.")
        return redirect(_skill_url(skill))
    on_domain_error(request, lambda error: _nothing_changed(request, skill, error))
    result = _change_files(request, skill=skill, action=action, base_version=int(base_version))
    _flash_publish(request, result)
    return redirect(_skill_url(skill))


def _nothing_changed(request, skill: Skill, error: ApplicationError) -> HttpResponse:
    advice = " Reload and apply your change to the newest version." if isinstance(error, VersionConflict) else ""
    return flash_back(request, f"Nothing changed: {error.detail}{advice}", default=_skill_url(skill))


def _change_files(request, *, skill: Skill, action: str, base_version: int) -> PublishResult:
    actor, path, message = _actor(request), request.POST.get("path", ""), request.POST.get("message", "")
    if action == "delete":
        return skill_file_delete(skill=skill, base_version=base_version, path=path, message=message, actor=actor)
    if action == "chmod":
        executable = request.POST.get("executable") == "1"
        return skill_file_set_executable(
            skill=skill, base_version=base_version, path=path, executable=executable, actor=actor
        )
    if action == "upload":
        uploads = request.FILES.getlist("files")
        for upload in uploads:  # before any is read into memory
            if upload.size > settings.SKILL_BUNDLE_MAX_BYTES:
                raise ApplicationError(f"'{upload.name}' is larger than the bundle limit.")
        files = [(upload.name, upload.read()) for upload in uploads]
        folder = request.POST.get("folder", "")
        return skill_files_add(
            skill=skill, base_version=base_version, files=files, folder=folder, message=message, actor=actor
        )
    raise ApplicationError(f"Unknown file action '{action[:40]}'.")


# --- a whole skill from a zip or a picked folder --------------------------------------------


class BundleUploadForm(forms.Form):
    """A zip (`bundle`) or a picked folder (`folder` files, `folder_paths`) and the API's options."""

    source = forms.ChoiceField(
        required=False,
        choices=PUBLISH_SOURCES,
        error_messages={"invalid_choice": PublishSourceField.default_error_messages["invalid_choice"]},
    )
    message = forms.CharField(required=False, max_length=500)
    base_version = forms.IntegerField(required=False, min_value=0)  # replacing: the version the page showed
    accept_lenient = forms.BooleanField(required=False)  # the "Publish as read" button
    read_sha256 = forms.CharField(required=False, max_length=64)  # the SKILL.md that step showed
    # Django keeps only the last part of an uploaded file's name, so console.js sends each picked
    # file's relative path here, in upload order (JSON list).
    folder_paths = forms.CharField(required=False)


def _folder_paths(text: str, *, count: int) -> list[str]:
    try:
        paths = json.loads(text) if text else None
    except ValueError:
        paths = None
    if not isinstance(paths, list) or len(paths) != count or not all(isinstance(p, str) for p in paths):
        raise ApplicationError(
            "The folder's file paths did not arrive with its files (picking a folder needs JavaScript); "
            "upload a zip of the folder instead.",
            fields={"folder_paths": "one path per file"},
        )
    return paths


def _uploaded_bundle(request, form: BundleUploadForm) -> tuple[Bundle, str]:
    """The bundle of an upload form, read by the API's readers, and what it was (for the message)."""
    archive, folder = request.FILES.get("bundle"), request.FILES.getlist("folder")
    if archive is not None and folder:
        raise ApplicationError("Upload a zip or a folder, not both.", fields={"bundle": "a zip or a folder"})
    if archive is not None:
        return read_zip(archive, limits=registry_limits()), archive.name
    if folder:
        paths = _folder_paths(form.cleaned_data["folder_paths"], count=len(folder))
        bundle = read_picked_folder(zip(paths, folder, strict=True), limits=registry_limits())
        return bundle, f"folder {paths[0].split('/')[0]}"
    raise ApplicationError(
        "Choose a zip of the skill folder, or the folder itself.", fields={"bundle": "a zip or a folder"}
    )


@console_view(scope=WRITE)
def skill_upload(request, name: str | None = None):
    """Create a skill from a zip or a picked folder (`POST /api/v1/skills` with a zip), or with
    `name` replace every file of that skill (a new version). A SKILL.md that needs a fallback
    reading is refused with its line and the "Publish as read" step, as in the editor.

    The form is htmx-enhanced: a refusal is swapped into the form, so the chosen files stay
    chosen for "Publish as read"; without JavaScript the page comes back and asks for them again."""
    skill = _skill(request, name) if name is not None else None
    form = BundleUploadForm(request.POST if request.method == "POST" else None)
    context: dict = {"skill": skill, "form": form}
    if skill is not None:
        context.update(_page_context(skill), base_version=skill.latest_version)
    if request.method != "POST":
        return render(request, "registry/skills/upload.html", context)
    bundle: Bundle | None = None  # the lambda reads it when called: what was read by then
    on_domain_error(request, lambda error: _upload_refused(request, context, error, bundle=bundle))
    if not form.is_valid():
        field, problems = next(iter(form.errors.items()))
        said = " ".join(str(problem) for problem in problems)
        raise ApplicationError(f"{field}: {said}", fields={field: said})
    if skill is not None and form.cleaned_data["base_version"] is None:
        # As in the editor: a replace is an edit of the version the page showed, and without it
        # a version published meanwhile would be replaced unseen (its files dropped).
        raise ApplicationError(
            "base_version: the version this page showed is missing; reload the page and upload again.",
            fields={"base_version": "required"},
        )
    bundle, what = _uploaded_bundle(request, form)
    result = skill_version_publish(
        bundle=bundle,
        source=skill.source if skill else form.cleaned_data["source"] or SkillSource.USER,
        message=form.cleaned_data["message"] or f"Upload {what}"[:500],
        base_version=form.cleaned_data["base_version"] if skill else None,
        expected_name=skill.name if skill else None,
        # Creating: a skill of that name in that source is refused as taken, never a new version of it.
        create=skill is None,
        accept_lenient=bool(form.cleaned_data["accept_lenient"])
        and form.cleaned_data["read_sha256"] == _text_sha256(_skill_md_text(bundle)),
        actor=_actor(request),
    )
    _flash_publish(request, result)
    url = _skill_url(result.skill)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _upload_refused(request, context: dict, error: ApplicationError, *, bundle: Bundle | None) -> HttpResponse:
    """The upload form again (swapped in under htmx, so the chosen files stay chosen)."""
    skill = context["skill"]
    context["publish_errors"] = _error_issues(error)
    if isinstance(error, VersionConflict):
        context["conflict"] = error.detail
    if isinstance(error, NameTaken):
        name, source = error.extra["name"], error.extra["source"]
        context["taken"] = SimpleNamespace(name=name, url=reverse("skill-detail", args=[name]) + f"?source={source}")
    if isinstance(error, LenientReadingRefused) and bundle is not None:
        context["as_read"] = _as_read(_skill_md_text(bundle), expected_name=skill.name if skill else None)
    page = "registry/skills/_upload_form.html#upload-result" if request.htmx else "registry/skills/upload.html"
    return render(request, page, context, status=error.status)


def _skill_md_text(bundle: Bundle) -> str:
    # A SKILL.md that is not UTF-8 is refused before any reading is offered to accept.
    return bundle.skill_md.decode("utf-8", "replace")


# --- enable / disable ----------------------------------------------------------------------


@console_view(scope=WRITE)
def skill_enabled(request, name: str):
    if request.method != "POST":
        return redirect(reverse("skill-detail", args=[name]))
    skill = _skill(request, name)
    enabled = request.POST.get("enabled") == "1"
    winner = selectors.skill_winner([skill, *selectors.skill_others(skill)])
    asks = not enabled and winner is not None and winner.pk == skill.pk and request.POST.get("confirm") != "1"
    if asks and (required_by := skill_required_by(name=skill.name)):
        # Agents loading the skills that require it would go without it: they are named first.
        context = {**_page_context(skill), "required_by": required_by}
        return render(request, "registry/skills/disable_confirm.html", context)
    skill = skill_set_enabled(skill=skill, enabled=enabled, actor=_actor(request))
    messages.success(request, f"{'Enabled' if enabled else 'Disabled'} {skill.name} ({skill.source}).")
    return redirect(_skill_url(skill))


# --- versions, diff, labels ----------------------------------------------------------------


@console_view(scope=READ)
def skill_versions(request, name: str):
    return _versions_page(request, _skill(request, name))


def _versions_page(request, skill: Skill, *, refusal: ApplicationError | None = None, attempt=None, status=200):
    """The versions page; after a refused label change, with the refusal in place (a policy's
    unmet checks, and for admins the override form) above the table."""
    labels = selectors.skill_labels(skill)
    by_version: dict[int, list[str]] = {}
    for label, number in sorted(labels.items()):
        by_version.setdefault(number, []).append(label)
    versions = selectors.skill_versions(skill)
    policies = label_policy_list()
    rollouts = skill_rollout_panels(skill)
    canaries: dict[int, list] = {}  # version number -> the labels it is the running canary of
    for panel in rollouts:
        canary = panel.label.canary_number
        if panel.label.rollout_active and canary is not None:
            canaries.setdefault(canary, []).append(panel.label)
    context = {
        **_page_context(skill),
        "versions": [(version, by_version.get(version.number, [])) for version in versions],
        "labels": sorted(labels.items(), key=lambda item: (item[0] != "production", item[0] != "staging", item[0])),
        "production": labels.get("production"),
        "served": selectors.skill_version_for(skill=skill).number,  # what a reader naming no label gets
        "canaries": canaries,
        "history": selectors.skill_label_history(skill, limit=50),
        "rollouts": rollouts,
        "policies": policies,
        "gates": _move_gates(request, skill, labels=labels, versions=versions, panels=rollouts, policies=policies),
        "refusal": refusal,
        "attempt": attempt,
    }
    return render(request, "registry/skills/versions.html", context, status=status)


@dataclass(frozen=True)
class MoveGates:
    """What each label change the versions page offers needs under its label's policy, shown
    beside its button before the click (`label_gate`, the reading the services enforce)."""

    production: dict[int, LabelGate]  # moving production to version N
    remove: dict[str, LabelGate]  # removing label L
    promote: dict[str, LabelGate]  # promoting the canary of label L


def _move_gates(request, skill: Skill, *, labels: dict[str, int], versions, panels, policies) -> MoveGates:
    """The gates of the protected labels' buttons, for the user's role (none for a reader)."""
    protected = {policy.label for policy in policies}
    if WRITE not in user_scopes(request.user) or not protected:
        return MoveGates({}, {}, {})
    role = acting_role(user_roles(request.user))

    def gate(label: str, version: SkillVersion | None) -> LabelGate:
        return label_gate(skill=skill, label=label, version=version, role=role)

    moves = [version for version in versions if version.number != labels.get("production")]
    # One reading for every version's button (label_gates), not one per version.
    production = (
        label_gates(skill=skill, label="production", versions=moves, role=role) if "production" in protected else []
    )
    return MoveGates(
        production={each.version: each for each in production if each.version is not None},
        remove={name: gate(name, None) for name in labels if name in protected},
        promote={
            panel.label.name: gate(panel.label.name, panel.label.canary_version)
            for panel in panels
            if panel.label.name in protected
        },
    )


@console_view(scope=READ)
def skill_diff(request, name: str):
    skill = _skill(request, name)
    new = _version(skill, request.GET.get("to") or skill.latest_version)
    old_ref = request.GET.get("from") or (new.number - 1 if new.number > 1 else None)
    old = _version(skill, old_ref) if old_ref else None
    context = {
        **_page_context(skill),
        "diff": selectors.skill_version_diff(old=old, new=new),
        "numbers": list(range(skill.latest_version, 0, -1)),
        **_capability_context(old=old, new=new),
        "scan_view": version_scan_view(new),
        "old_scan": version_scan_view(old) if old is not None else None,
    }
    return render(request, "registry/skills/diff.html", context)


def _capability_context(*, old: SkillVersion | None, new: SkillVersion) -> dict:
    """What `_capabilities_diff.html` shows: what `new` can do that `old` cannot, and back."""
    return {
        "capability_diff": version_capabilities_diff(old=old, new=new),
        "capability_from": f"v{old.number}" if old is not None else "nothing",
        "capability_to": new.number,
    }


def _approving_capabilities(gate: LabelGate, role: str) -> bool:
    """An admin's move whose only unmet check is `new_capabilities`: the confirm page shows what
    the version adds and asks for the reason that approves it (the override the service records)."""
    return role == ADMIN and bool(gate.unmet) and all(check["check"] == NEW_CAPABILITIES for check in gate.unmet)


@console_view(scope=WRITE)
def skill_labels(request, name: str):
    """Move or remove a label. Anything that moves `production` (a rollout's Promote too) shows a
    confirmation page first (what each audience is served before and after, with the diffs), and
    only its Confirm button writes."""
    if request.method != "POST":
        return redirect(reverse("skill-versions", args=[name]))
    skill = _skill(request, name)
    label = request.POST.get("label", "").strip()
    versions_url = _skill_url(skill, "skill-versions")
    role = acting_role(user_roles(request.user))
    action = request.POST.get("action", "move")
    attempt = {"label": label, "version": request.POST.get("version", ""), "action": action}
    on_domain_error(
        request, lambda error: _versions_page(request, skill, refusal=error, attempt=attempt, status=error.status)
    )
    override_reason = request.POST.get("override_reason", "").strip() or None
    if action == "delete":
        label_delete(skill=skill, label=label, actor=_actor(request), role=role, override_reason=override_reason)
        messages.success(request, f"Removed label {label} from {skill.name}.")
        return redirect(versions_url)
    target = _version(skill, request.POST.get("version"))
    current = selectors.skill_labels(skill).get(label)
    if label == "production" and request.POST.get("confirm") != "1" and current != target.number:
        # A move its policy refuses is refused here, before the confirmation asks about it.
        label_name_check(label)
        gate = label_gate(skill=skill, label=label, version=target, role=role)
        approving = _approving_capabilities(gate, role)
        if not approving:
            label_policy_enforce(skill=skill, label=label, version=target, actor=_actor(request), role=role)
        served = _version(skill, current) if current else None  # what the policy compares with
        context = {
            **_page_context(skill),
            "label": label,
            "target": target,
            "current": current,
            "audiences": selectors.label_move_audiences(skill=skill, label=label, target=target),
            **_capability_context(old=served, new=target),
            "capability_gate": gate if approving else None,
            "scan_view": version_scan_view(target),
        }
        return render(request, "registry/skills/label_confirm.html", context)
    promoting = any(
        rollout.name == label and rollout.rollout_active and rollout.canary_version_id == target.pk
        for rollout in skill_rollouts(skill)
    )
    label_move(
        skill=skill,
        label=label,
        version_number=target.number,
        actor=_actor(request),
        role=role,
        override_reason=override_reason,
    )
    if promoting:
        messages.success(request, f"Promoted v{target.number} to {label}: the rollout is over.")
    elif current == target.number:
        messages.info(request, f"{label} already points to v{target.number}.")
    else:
        moved = f"from v{current} " if current else ""
        messages.success(request, f"Moved {label} of {skill.name} {moved}to v{target.number}.")
    return redirect(versions_url)


@console_view(scope=WRITE)
def skill_label_gate(request, name: str):
    """The gate of the "Move a label" form's label and version, swapped in beside its button as
    they change (htmx): empty for an unprotected label or a label name not valid yet."""
    skill = _skill(request, name)
    label = request.GET.get("label", "").strip()
    if label == IMPLICIT_LABEL or not LABEL_NAME.fullmatch(label):
        return HttpResponse("")
    version = _version(skill, request.GET.get("version"))
    gate = label_gate(skill=skill, label=label, version=version, role=acting_role(user_roles(request.user)))
    if gate.policy is None:
        return HttpResponse("")
    return render(request, "registry/skills/_label_gate.html", {"gate": gate})


@console_view(scope=WRITE)
def skill_rollout(request, name: str):
    """Start, raise or lower (`set`) or abort a label's rollout, through the services the API
    calls; a policy refusal comes back as a message on the versions page. Promoting is a move of
    the label (`skill_labels`), so `production` gets the same confirmation as any move."""
    if request.method != "POST":
        return redirect(reverse("skill-versions", args=[name]))
    skill = _skill(request, name)
    label = request.POST.get("label", "production").strip()
    action = request.POST.get("action", "set")
    versions_url = _skill_url(skill, "skill-versions")
    on_domain_error(
        request, lambda error: flash_back(request, f"Rollout not changed: {error.detail}", default=versions_url)
    )
    actor, role = _actor(request), acting_role(user_roles(request.user))
    reason = request.POST.get("override_reason") or None
    if action == "abort":
        aborted = label_rollout_abort(skill=skill, label=label, actor=actor)
        messages.success(
            request, f"Aborted the rollout of {label}: every subject reads v{aborted.version.number} again."
        )
    else:
        target = _version(skill, request.POST.get("version"))
        weight = request.POST.get("weight", "")
        label_rollout_set(
            skill=skill,
            label=label,
            version_number=target.number,
            weight=int(weight) if weight.isdecimal() else weight,  # the service names a bad one
            actor=actor,
            role=role,
            override_reason=reason,
        )
        messages.success(request, f"v{target.number} now serves {weight}% of {label}.")
    return redirect(versions_url)


urlpatterns = [
    path("skills/", skill_list, name="skill-list"),
    path("skills/new/", skill_new, name="skill-new"),
    path("skills/new/upload/", skill_upload, name="skill-upload"),
    path("skills/<str:name>/", skill_detail, name="skill-detail"),
    path("skills/<str:name>/edit/", skill_edit, name="skill-edit"),
    path("skills/<str:name>/versions/", skill_versions, name="skill-versions"),
    path("skills/<str:name>/rollout/", skill_rollout, name="skill-rollout"),
    path("skills/<str:name>/diff/", skill_diff, name="skill-diff"),
    path("skills/<str:name>/labels/", skill_labels, name="skill-labels"),
    path("skills/<str:name>/labels/gate/", skill_label_gate, name="skill-label-gate"),
    path("skills/<str:name>/enabled/", skill_enabled, name="skill-enabled"),
    path("skills/<str:name>/files/", skill_files, name="skill-files"),
    path("skills/<str:name>/upload/", skill_upload, name="skill-replace"),
    path("skills/<str:name>/files/<path:file_path>", skill_file, name="skill-file"),
]
