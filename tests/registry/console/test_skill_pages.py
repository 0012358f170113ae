"""The skills console through Django's test client: pages, writes through the services, roles,
the conflict screen, labels and rollback, bundle files, and bounded query counts."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry.models import AuditLog, Label, Skill, SkillScan, SkillVersion
from registry.scanning.runner import ScanOutcome
from registry.selectors import skill_get
from registry.services.audit import Actor
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_set
from registry.services.scans import scan_record
from registry.services.skills import skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from tests.factories import UserFactory, make_skill_md, publish

pytestmark = pytest.mark.django_db

PAGES = [
    "/skills/",
    "/skills/new/",
    "/skills/demo-skill/",
    "/skills/demo-skill/edit/",
    "/skills/demo-skill/versions/",
    "/skills/demo-skill/diff/?from=1&to=1",
    "/skills/demo-skill/files/scripts/run.sh",
]


def _textarea(html: str) -> str:
    found = re.search(r'<textarea name="skill_md"[^>]*>\n?(.*?)</textarea>', html, re.S)
    assert found, "the editor has a textarea named skill_md"
    return found.group(1)


def _publish_form(skill_md: str, base_version: int, message: str = "") -> dict:
    return {"skill_md": skill_md, "base_version": str(base_version), "message": message}


@pytest.mark.parametrize("url", PAGES)
def test_logged_out_every_skills_page_redirects_to_login(client, url):
    publish("demo-skill", files=[("scripts/run.sh", b"echo hi\n", True)])

    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.parametrize("url", PAGES)
def test_an_author_sees_every_skills_page(author_client, url):
    publish("demo-skill", files=[("scripts/run.sh", b"echo hi\n", True)])

    response = author_client.get(url)

    assert response.status_code == 200
    # Template syntax that leaks into the page (a multi-line {# #} comment, a typo'd tag) is text.
    assert not re.search(r"\{[#%]|[#%]\}", response.content.decode())


def test_an_analyst_reads_skills_but_sees_no_write_controls(analyst_client):
    publish("demo-skill")
    publish("demo-skill", description="Second version of the demo.")

    listing = analyst_client.get("/skills/").content.decode()
    page = analyst_client.get("/skills/demo-skill/").content.decode()
    versions = analyst_client.get("/skills/demo-skill/versions/").content.decode()

    assert "demo-skill" in listing and "New skill" not in listing
    assert "Edit SKILL.md" not in page and "Upload" not in page and "Disable this skill" not in page
    assert "production to v" not in versions and "Move label" not in versions


@pytest.mark.parametrize(
    ("method", "url", "data"),
    [
        ("get", "/skills/new/", {}),
        ("get", "/skills/demo-skill/edit/", {}),
        ("post", "/skills/new/", {"skill_md": make_skill_md("other"), "base_version": "0"}),
        ("post", "/skills/demo-skill/edit/", {"skill_md": make_skill_md(), "base_version": "1", "check": "problems"}),
        ("post", "/skills/demo-skill/labels/", {"label": "production", "version": "1", "confirm": "1"}),
        ("post", "/skills/demo-skill/enabled/", {"enabled": "0"}),
        ("post", "/skills/demo-skill/files/", {"action": "delete", "path": "x", "base_version": "1"}),
    ],
)
def test_every_skills_write_refuses_an_analyst_with_403(analyst_client, method, url, data):
    publish("demo-skill")

    response = getattr(analyst_client, method)(url, data)

    assert response.status_code == 403
    assert SkillVersion.objects.count() == 1 and not Label.objects.exists()
    assert Skill.objects.get().enabled


def test_writes_need_the_csrf_token(author):
    from django.test import Client

    publish("demo-skill")
    client = Client(enforce_csrf_checks=True)
    client.force_login(author)

    response = client.post("/skills/demo-skill/edit/", _publish_form(make_skill_md(body="# New\n"), 1))

    assert response.status_code == 403
    assert SkillVersion.objects.count() == 1


def test_an_author_creates_a_skill_and_it_is_audited_as_a_console_write(author_client, author):
    text = make_skill_md("fresh-skill", description="Creates fresh things when asked.")

    response = author_client.post("/skills/new/", _publish_form(text, 0, "First draft"), follow=True)

    version = SkillVersion.objects.get(skill__name="fresh-skill")
    assert version.number == 1 and version.message == "First draft" and version.author == author
    assert version.skill_md == text
    assert "Published fresh-skill v1." in response.content.decode()
    audit = AuditLog.objects.get(action="version.publish")
    assert audit.actor == author and audit.via == "console"


def test_a_new_skill_from_the_script_template_gets_its_executable_script(author_client):
    page = author_client.get("/skills/new/?template=script").content.decode()
    text = _textarea(page).replace("&#x27;", "'").replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    text = text.replace("&amp;", "&").replace("my-new-skill", "checker")

    author_client.post("/skills/new/", {**_publish_form(text, 0), "template": "script"})

    version = SkillVersion.objects.get(skill__name="checker")
    assert [(f.path, f.executable) for f in version.files.all()] == [("scripts/check.sh", True)]


def test_textarea_line_endings_are_those_of_the_version_being_edited(author_client):
    crlf = make_skill_md().replace("\n", "\r\n")
    publish_result = publish("demo-skill")
    SkillVersion.objects.filter(pk=publish_result.version.pk).update(skill_md=crlf)

    response = author_client.post("/skills/demo-skill/edit/", _publish_form(crlf.replace("Step two", "Step 2"), 1))

    assert response.status_code == 302
    assert SkillVersion.objects.get(number=2).skill_md == crlf.replace("Step two", "Step 2")


def test_live_validation_answers_each_problem_with_its_line_without_publishing(author_client):
    publish("demo-skill")
    broken = "---\nname: demo-skill\ntags: [a, b\n---\n\nBody\n"

    response = author_client.post(
        "/skills/demo-skill/edit/",
        {"skill_md": broken, "base_version": "1", "check": "problems"},
        HTTP_HX_REQUEST="true",
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="problems"' in html and "<html" not in html  # the fragment only
    assert re.search(r"line \d+:", html)
    assert SkillVersion.objects.count() == 1


def test_live_validation_flags_a_renamed_skill_on_the_name_line(author_client):
    publish("demo-skill")

    response = author_client.post(
        "/skills/demo-skill/edit/",
        {"skill_md": make_skill_md("renamed"), "base_version": "1", "check": "problems"},
        HTTP_HX_REQUEST="true",
    )

    assert "line 2:" in response.content.decode()
    assert "must stay" in response.content.decode()


def test_an_invalid_publish_keeps_the_text_and_names_the_line(author_client):
    publish("demo-skill")
    broken = "---\nname: demo-skill\n---\nno description\n"

    response = author_client.post("/skills/demo-skill/edit/", _publish_form(broken, 1))

    html = response.content.decode()
    assert response.status_code == 400
    assert "line 1:" in html or "line 2:" in html
    assert _textarea(html) == broken
    assert SkillVersion.objects.count() == 1


def test_a_stale_publish_is_a_409_conflict_that_keeps_the_users_text(author_client):
    publish("demo-skill")
    publish("demo-skill", description="Someone else's newer words.")
    mine = make_skill_md(body="# Mine\n\nMy careful edit.\n")

    response = author_client.post("/skills/demo-skill/edit/", _publish_form(mine, 1, "my edit"))

    html = response.content.decode()
    assert response.status_code == 409
    assert "conflict" in html.lower()
    assert _textarea(html) == mine
    assert 'name="base_version" value="2"' in html  # publishing now goes on top of theirs
    assert "Someone else&#x27;s newer words." in html  # their side of the diff
    assert SkillVersion.objects.count() == 2

    again = author_client.post("/skills/demo-skill/edit/", _publish_form(mine, 2, "my edit"))

    assert again.status_code == 302
    assert SkillVersion.objects.get(number=3).skill_md == mine


def test_creating_a_name_that_exists_is_refused_as_taken_and_nothing_offers_to_overwrite(author_client):
    publish("demo-skill", description="Their words.")
    mine = make_skill_md(body="# Other\n")

    for base_version in (0, 1):  # a hand-made form naming their version changes nothing
        response = author_client.post("/skills/new/", _publish_form(mine, base_version))
        html = response.content.decode()
        assert response.status_code == 409
        assert "demo-skill</strong> exists (v1 by system)" in html
        assert 'href="/skills/demo-skill/?source=user">open it</a> or choose another name' in html
        assert "Edit conflict" not in html and "on top of" not in html and "based on version" not in html
        assert _textarea(html) == mine  # the text is kept, to rename
    assert SkillVersion.objects.filter(skill__name="demo-skill").count() == 1


def test_the_new_pages_live_check_says_a_name_is_taken_and_by_whom(author_client):
    ann = UserFactory(username="ann")
    for n in (1, 2, 3):
        skill_version_publish(
            bundle=bundle_from_parts(make_skill_md("csv-cleaner", body=f"# v{n}\n").encode(), ()),
            actor=Actor(user=ann),
        )

    def problems(text: str) -> str:
        response = author_client.post(
            "/skills/new/", {"skill_md": text, "base_version": "0", "check": "problems"}, HTTP_HX_REQUEST="true"
        )
        assert response.status_code == 200
        return response.content.decode()

    taken = problems(make_skill_md("csv-cleaner"))
    assert "csv-cleaner</strong> exists (v3 by ann)" in taken and '<span class="badge badge-bad">1 error' in taken
    assert 'href="/skills/csv-cleaner/?source=user">open it</a>' in taken
    free = problems(make_skill_md("csv-tidier"))
    assert "exists" not in free and "No problems" in free
    # Editing the skill itself is no clash: the name is its own.
    edit = author_client.post(
        "/skills/csv-cleaner/edit/",
        {"skill_md": make_skill_md("csv-cleaner"), "base_version": "3", "check": "problems"},
        HTTP_HX_REQUEST="true",
    )
    assert "exists" not in edit.content.decode()


def test_publishing_identical_content_creates_nothing_and_says_so(author_client):
    publish("demo-skill")

    response = author_client.post("/skills/demo-skill/edit/", _publish_form(make_skill_md(), 1), follow=True)

    assert "Nothing to publish" in response.content.decode()
    assert SkillVersion.objects.count() == 1


def test_editing_keeps_the_bundle_files(author_client):
    publish("demo-skill", files=[("scripts/run.sh", b"echo hi\n", True)])

    author_client.post("/skills/demo-skill/edit/", _publish_form(make_skill_md(body="# Changed\n"), 1))

    files = SkillVersion.objects.get(number=2).files.all()
    assert [(f.path, f.executable) for f in files] == [("scripts/run.sh", True)]


def test_uploading_deleting_and_chmod_of_files_each_publish_a_version(author_client):
    publish("demo-skill", files=[("scripts/run.sh", b"echo hi\n", True)])

    author_client.post(
        "/skills/demo-skill/files/",
        {
            "action": "upload",
            "base_version": "1",
            "folder": "references",
            "files": [SimpleUploadedFile("a.md", b"# A\n"), SimpleUploadedFile("b.txt", b"B\n")],
        },
    )
    author_client.post(
        "/skills/demo-skill/files/",
        {"action": "chmod", "base_version": "2", "path": "scripts/run.sh", "executable": "0"},
    )
    response = author_client.post(
        "/skills/demo-skill/files/",
        {"action": "delete", "base_version": "3", "path": "references/b.txt"},
        follow=True,
    )

    def files(number):
        return [(f.path, f.executable) for f in SkillVersion.objects.get(number=number).files.all()]

    assert files(2) == [("references/a.md", False), ("references/b.txt", False), ("scripts/run.sh", True)]
    assert files(3) == [("references/a.md", False), ("references/b.txt", False), ("scripts/run.sh", False)]
    assert files(4) == [("references/a.md", False), ("scripts/run.sh", False)]
    assert "Published demo-skill v4." in response.content.decode()


@pytest.mark.parametrize("path", ["../evil.sh", "/abs.sh"])
def test_a_file_upload_with_an_unsafe_folder_changes_nothing(author_client, path):
    publish("demo-skill")
    folder, _, name = path.rpartition("/")

    response = author_client.post(
        "/skills/demo-skill/files/",
        {"action": "upload", "base_version": "1", "folder": folder or "..", "files": SimpleUploadedFile(name, b"x")},
        follow=True,
    )

    assert "Nothing changed" in response.content.decode()
    assert SkillVersion.objects.count() == 1


def test_a_file_action_on_a_stale_page_changes_nothing(author_client):
    publish("demo-skill", files=[("scripts/run.sh", b"echo hi\n", True)])
    publish("demo-skill", description="Newer.", files=[("scripts/run.sh", b"echo hi\n", True)])

    response = author_client.post(
        "/skills/demo-skill/files/", {"action": "delete", "base_version": "1", "path": "scripts/run.sh"}, follow=True
    )

    assert "Nothing changed" in response.content.decode()
    assert SkillVersion.objects.count() == 2


def test_rollback_asks_for_confirmation_then_moves_production(author_client, author):
    publish("demo-skill")
    publish("demo-skill", description="Version two.")
    label_move(skill=skill_get(name="demo-skill"), label="production", version_number=2)

    versions = author_client.get("/skills/demo-skill/versions/").content.decode()
    assert "Move production back to v1" in versions and "production to v2" not in versions

    asked = author_client.post("/skills/demo-skill/labels/", {"label": "production", "version": "1"})
    assert asked.status_code == 200 and ">Confirm<" in asked.content.decode()
    assert Label.objects.get(name="production").version.number == 2

    author_client.post("/skills/demo-skill/labels/", {"label": "production", "version": "1", "confirm": "1"})
    assert Label.objects.get(name="production").version.number == 1
    assert AuditLog.objects.filter(action="label.move", actor=author, via="console").exists()


def _audiences(html: str) -> dict[str, str]:
    """Each audience line of a confirmation page: who -> what they are served before → after."""
    found = re.findall(r'<li data-audience="([^"]+)">.*?<span class="audience-change">(.*?)</span>', html, re.S)
    return {who: " ".join(re.sub(r"<[^>]+>", "", change).split()) for who, change in found}


def test_the_first_production_label_states_the_real_change_for_each_audience(author_client):
    publish("demo-skill", body="# One\n\nFirst words.\n")
    publish("demo-skill", body="# Two\n\nSecond words.\n")

    asked = author_client.post("/skills/demo-skill/labels/", {"label": "production", "version": "1"})

    html = asked.content.decode()
    assert asked.status_code == 200 and not Label.objects.exists()
    assert _audiences(html) == {
        "naming production": "nothing (the skill has no production label) → v1",
        "naming no label": "v2 (the latest: no version is labelled production) → v1",
    }
    # Unlabelled readers' diff is v2 -> v1 (lines removed and added), not the whole file added.
    unlabelled = html.split('data-audience-diff="naming no label"')[1]
    assert re.search(r'<tr class="del">(?:(?!</tr>).)*Second words\.', unlabelled)
    assert re.search(r'<tr class="add">(?:(?!</tr>).)*First words\.', unlabelled)
    labelled = html.split('data-audience-diff="naming production"')[1].split("data-audience-diff")[0]
    assert '<tr class="add">' in labelled and '<tr class="del">' not in labelled  # for them it is all new


def test_a_production_move_is_one_audience_and_a_running_rollout_is_named(author_client):
    for n in (1, 2, 3):
        publish("demo-skill", description=f"Version {n}.")
    skill = skill_get(name="demo-skill")
    label_move(skill=skill, label="production", version_number=1)
    label_rollout_set(skill=skill, label="production", version_number=2, weight=10)

    asked = author_client.post("/skills/demo-skill/labels/", {"label": "production", "version": "3"})

    assert _audiences(asked.content.decode()) == {
        "naming production, naming no label": "v1, and v2 for 10% of subjects (the rollout) → v3"
    }


def test_a_rollouts_promote_goes_through_the_confirmation_page(author_client):
    publish("demo-skill")
    publish("demo-skill", description="Version two.")
    skill = skill_get(name="demo-skill")
    label_move(skill=skill, label="production", version_number=1)
    label_rollout_set(skill=skill, label="production", version_number=2, weight=25)
    versions = author_client.get("/skills/demo-skill/versions/").content.decode()
    promote = re.search(
        r'<form method="post" action="([^"]+)"[^>]*>(?:(?!</form>).)*Promote v2</button>', versions, re.S
    )
    assert promote and promote.group(1) == "/skills/demo-skill/labels/"
    assert "onclick" not in versions

    asked = author_client.post("/skills/demo-skill/labels/", {"label": "production", "version": "2"})
    assert ">Confirm<" in asked.content.decode()
    assert Label.objects.get(name="production").weight == 25  # asking moved nothing

    done = author_client.post(
        "/skills/demo-skill/labels/", {"label": "production", "version": "2", "confirm": "1"}, follow=True
    )
    assert "Promoted v2 to production: the rollout is over." in done.content.decode()
    label = Label.objects.get(name="production")
    assert label.version.number == 2 and label.canary_version is None


def test_other_labels_move_and_are_removed_without_a_confirmation_page(author_client):
    publish("demo-skill")

    author_client.post("/skills/demo-skill/labels/", {"label": "staging", "version": "1"})
    assert Label.objects.get().name == "staging"
    response = author_client.post("/skills/demo-skill/labels/", {"label": "staging", "action": "delete"}, follow=True)

    assert not Label.objects.exists()
    assert "Removed label staging" in response.content.decode()


def test_a_bad_label_name_is_refused_in_place_not_a_500(author_client):
    publish("demo-skill")

    response = author_client.post("/skills/demo-skill/labels/", {"label": "Not OK!", "version": "1"}, follow=True)

    assert response.status_code == 400
    assert 'id="label-refusal"' in response.content.decode()
    assert "Label names are 1-36 characters" in response.content.decode()


def test_enable_and_disable(author_client):
    publish("demo-skill")

    author_client.post("/skills/demo-skill/enabled/", {"enabled": "0"})
    assert not Skill.objects.get().enabled
    author_client.post("/skills/demo-skill/enabled/", {"enabled": "1"})
    assert Skill.objects.get().enabled


def test_the_diff_page_shows_skill_md_and_file_changes(author_client):
    publish("demo-skill", files=[("scripts/run.sh", b"echo one\n", True)])
    publish("demo-skill", description="Changed words.", files=[("scripts/run.sh", b"echo two\n", True)])

    html = author_client.get("/skills/demo-skill/diff/?from=1&to=2").content.decode()

    assert "description: Changed words." in html and "scripts/run.sh" in html and "echo two" in html
    assert 'class="add"' in html and 'class="del"' in html


def test_shadowed_skills_are_listed_as_shadowed(author_client):
    publish("demo-skill", source="bundled")
    publish("demo-skill", source="user")

    html = author_client.get("/skills/").content.decode()

    assert html.count(">demo-skill</strong>") == 2
    assert "shadowed by user" in html
    assert "/skills/demo-skill/?source=bundled" in html


def test_search_answers_the_table_fragment_to_htmx(author_client):
    publish("pdf-tools", description="Extract text from PDF files.")
    publish("sql-query", description="Write SQL queries.")

    response = author_client.get("/skills/?q=pdf", HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert "<html" not in html and 'id="skill-table"' in html
    assert "pdf-tools" in html and "sql-query" not in html


def test_filters_and_pagination(author_client):
    for number in range(55):
        publish(f"skill-{number:02d}", tags=["many"] if number % 2 else ["few"])

    first = author_client.get("/skills/?tag=many").content.decode()
    second = author_client.get("/skills/?tag=many&page=2").content.decode()

    assert "27 skills" in first
    assert "skill-01" in first and "skill-00" not in first
    assert "Page 1 of 1" not in first  # 27 rows fit one page
    all_pages = author_client.get("/skills/?page=2").content.decode()
    assert "Page 2 of 2" in all_pages and "skill-54" in all_pages
    assert "skill-01" in second


def test_rendered_markdown_drops_scripts_and_javascript_links(author_client):
    body = (
        "# T\n\n<script>window.__xss=1</script>\n\n[click](javascript:window.__xss=1)\n\n<img src=x onerror=alert(1)>\n"
    )
    publish("demo-skill", body=body)

    html = author_client.get("/skills/demo-skill/").content.decode()

    assert "<script>window.__xss" not in html
    assert 'href="javascript:' not in html.lower()
    assert "<img src=x onerror" not in html


# --- query counts: pages stay bounded whatever the number of skills or versions -----------


@pytest.fixture
def crowded_registry():
    for number in range(40):
        publish(f"skill-{number:02d}", files=[("scripts/run.sh", b"echo hi\n", True)])
    for number in range(12):
        publish("skill-00", description=f"Revision {number}.", files=[("scripts/run.sh", b"echo hi\n", True)])
    label_move(skill=skill_get(name="skill-00"), label="production", version_number=3)


@pytest.mark.parametrize(
    ("url", "max_queries"),
    [
        ("/skills/", 10),
        ("/skills/?q=skill&tag=x&source=user", 10),
        ("/skills/skill-00/", 17),  # the skills that require it: one query
        ("/skills/skill-00/edit/", 12),
        ("/skills/skill-00/versions/", 14),
        ("/skills/skill-00/diff/?from=2&to=9", 15),  # each side's scan and capabilities
    ],
)
def test_pages_do_a_bounded_number_of_queries(
    author_client, crowded_registry, django_assert_max_num_queries, url, max_queries
):
    author_client.get(url)  # warm per-process caches (session, generation)

    with django_assert_max_num_queries(max_queries):
        assert author_client.get(url).status_code == 200


def test_live_validation_does_not_touch_the_database_beyond_the_session(author_client, django_assert_max_num_queries):
    publish("demo-skill")
    author_client.get("/skills/demo-skill/edit/")

    with django_assert_max_num_queries(8):
        author_client.post(
            "/skills/demo-skill/edit/",
            {"skill_md": make_skill_md(), "base_version": "1", "check": "problems"},
            HTTP_HX_REQUEST="true",
        )


def test_the_role_badge_is_shown(client):
    user = UserFactory(username="ann")
    user.groups.add(Group.objects.get_or_create(name="author")[0])
    client.force_login(user)

    html = client.get("/skills/").content.decode()

    assert "role-author" in html


def test_the_skill_page_gives_skill_md_its_sha256_like_every_other_file(analyst_client):
    import hashlib

    publish("demo-skill", files=[("scripts/run.sh", b"echo hi\n", True)])
    digest = hashlib.sha256(SkillVersion.objects.get().skill_md.encode("utf-8")).hexdigest()

    page = analyst_client.get("/skills/demo-skill/").content.decode()

    assert f'title="{digest}">{digest[:12]}</td>' in page


def test_the_skill_header_marks_the_page_being_shown(analyst_client):
    publish("marked", description="Marks its tab.")
    for path, tab in (
        ("/skills/marked/", "Overview"),
        ("/skills/marked/versions/", "Versions"),
        ("/skills/marked/evals/", "Evals"),
    ):
        page = analyst_client.get(path).content.decode()
        current = re.findall(r'<a class="btn" href="[^"]*" aria-current="page">(\w+)', page)
        assert current == [tab], (path, current)


FINDING = {"analyzer": "static", "rule_id": "R1", "severity": "HIGH", "category": "c", "title": "t", "file": "SKILL.md"}


def test_the_versions_page_under_a_strict_policy_costs_the_same_queries_for_2_or_10_versions(author_client):
    """Each version's Move button shows its gate (its scan, what it adds, its signature, whether
    production served it within the rollback window): read for all versions at once, never once
    per version. (A policy's require_eval evidence is still read per version.)"""
    label_policy_set(
        label="production",
        roles=["author", "admin"],
        rollback_window="7d",
        new_capabilities="admin",
        require_publisher_signature=True,
        require_scan={"max_verdict": "review"},
    )

    def queries_with(versions: int, name: str) -> int:
        for number in range(versions):
            published = publish(
                name,
                description=f"Revision {number}.",
                files=[("scripts/run.sh", f"curl https://x{number}.example\n".encode(), True)],
            )
            scan = SkillScan.objects.get(version=published.version)
            scan_record(scan=scan, outcome=ScanOutcome(verdict="warn", findings=[FINDING]), duration=timedelta(0))
        skill = skill_get(name=name)
        for number in (2, 1):  # production served v2 within the window: moving back to it is a rollback
            label_move(skill=skill, label="production", version_number=number, override_reason="setting up")
        url = f"/skills/{name}/versions/"
        author_client.get(url)  # warm per-process caches (session, generation)
        with CaptureQueriesContext(connection) as queries:
            assert author_client.get(url).status_code == 200
        return len(queries)

    two, ten = queries_with(2, "two-versions"), queries_with(10, "ten-versions")
    assert two == ten, f"{two} queries for 2 versions, {ten} for 10"
