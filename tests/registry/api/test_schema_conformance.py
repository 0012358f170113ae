"""The published OpenAPI schema tells the truth (SPEC §1, §5): schemathesis loads /api/schema/ from
the WSGI app, sends every operation requests it derives from the schema, valid and invalid ones,
and checks each answer: no 500, only documented status codes and content types, bodies that match
their schemas, invalid input refused and valid input accepted."""

from __future__ import annotations

import uuid

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from agents.models import AgentTurn, TraceEvent, TurnStatus
from config.wsgi import application
from registry.models import ForceIncludeRule, TokenScope
from registry.roles import ADMIN
from registry.services.labels import label_move
from tests.factories import publish, user_with_role

SKILL = "conformance"
RULE_ID = 4242
TURN_ID = uuid.UUID("5c0f6a57-3b4e-4d51-9f1e-2f4bd1b0c001")

# A zip upload is raw bytes on the wire, like any octet stream.
schemathesis.serializer.alias("application/zip", "application/octet-stream")

# The schema is served to logged-in users and tokens only; it is read here before any exists.
with override_settings(API_DOCS_PUBLIC=True):
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/",
        application,
        config=schemathesis.Config.from_dict(
            {
                # U+0000 is refused anywhere in a body because PostgreSQL cannot store it; the schema
                # says so in words (the 400 description), as JSON Schema has no way to.
                "generation": {"allow-x00": False},
                # Half the time a path names a skill, rule or turn that exists, so reads and writes get
                # past 404 to real answers; the other half probes names that do not.
                "dictionaries": {
                    "skills": {"values": [SKILL]},
                    "rules": {"values": [RULE_ID]},
                    "turns": {"values": [str(TURN_ID)]},
                },
                "parameters": {
                    "path.name": {"dictionary": "skills", "probability": 0.5},
                    "path.rule_id": {"dictionary": "rules", "probability": 0.5},
                    "path.turn_id": {"dictionary": "turns", "probability": 0.5},
                },
            }
        ),
    )

# Rules the schema states in words only (OpenAPI 3.0 cannot relate two fields, nor judge a SKILL.md,
# a zip or a regex). A schema-valid request may be refused with 400 for these and nothing else;
# each is named by the error code or the field the 400 names.
UNSTATED_RULES: dict[str, set[str]] = {
    # `label` and `version` are mutually exclusive.
    "GET /api/v1/skills/{name}": {"version"},
    "GET /api/v1/skills/{name}/SKILL.md": {"version"},
    "GET /api/v1/skills/{name}/bundle.zip": {"version"},
    "GET /api/v1/skills/{name}/files/{path}": {"version"},
    # `from` must not be after `to`; analytics dates lie in 1970..2999 (stated in words: OpenAPI 3.0
    # has no bounds for a date); an hourly series over a long range has too many buckets.
    "GET /api/v1/analytics/skills": {"from", "to"},
    "GET /api/v1/analytics/skills/{name}/timeseries": {"from", "to", "interval"},
    "GET /api/v1/analytics/skills/{name}/compare": {"from", "to"},
    "GET /api/v1/analytics/funnel": {"from", "to"},
    "GET /api/v1/analytics/failing": {"from", "to"},
    # The SKILL.md and the bundle's files are judged by the parser (SPEC §2); a field it read as text
    # needs `accept_lenient`.
    "POST /api/v1/skills": {"invalid_skill", "lenient_reading", "invalid_bundle"},
    "POST /api/v1/skills/{name}/versions": {"invalid_skill", "lenient_reading", "invalid_bundle"},
    # An RE2-compilable pattern, a unique name, and a rule that does something.
    "POST /api/v1/rules": {"invalid_rule", "invalid_pattern"},
    "PATCH /api/v1/rules/{rule_id}": {"invalid_rule", "invalid_pattern"},
    # A feedback event needs a rating; an event's `at` lies in 1970..2999.
    "POST /api/v1/usage": {"rating", "at"},
    # `model` is one of the operator's AGENT_MODELS; `script` goes with `model: "scripted"` only,
    # and follows the script format; a forced skill (`forced_skill`, or a leading `/name` in
    # `message`) must name an enabled skill, and a pin (`skill_versions.<name>`) a version of one.
    "POST /api/v1/agent/turns": {"model", "script", "forced_skill", "message", "skill_versions"},
    # `version` and `source` go with `skill`, `detail` with `cause`; `from` must not be after `to`.
    "GET /api/v1/agent/turns": {"version", "source", "detail", "from", "to"},
    "GET /api/v1/agent/turns/causes": {"version", "source", "detail", "from", "to"},
    # A webhook URL must be http(s) and resolve, to public addresses only; a `whsec_` secret is
    # base64 of at least 24 bytes.
    "POST /api/v1/webhooks": {"url", "secret"},
    # An eval suite's cases follow the case format (docs/authors/evals.md); a run takes a version or a
    # label, one of AGENT_MODELS, and a version a turn can be pinned to.
    "PUT /api/v1/skills/{name}/evals": {"invalid_suite"},
    "POST /api/v1/skills/{name}/evals/runs": {"model", "label", "skill_versions"},
    "POST /api/v1/catalog/evals/runs": {"model"},
    # A model check's models are among AGENT_MODELS.
    "POST /api/v1/catalog/evals/model-check": {"candidate_model", "current_model"},
    # `latest` fits the label pattern but is implicit: no policy protects it. A policy's
    # `require_eval.model` is one of AGENT_MODELS, its `rollback_window` a duration of 0-365 days.
    "GET /api/v1/label-policies/{label}": {"invalid_label"},
    # A skillset's members name skills that exist, enabled, at versions or labels they have; a set
    # has members, its name is not a skill's; `latest` fits the label pattern but cannot be moved.
    "PUT /api/v1/skillsets/{name}": {"invalid_skillset"},
    "PUT /api/v1/skillsets/{name}/labels/{label}": {"invalid_label", "invalid_skillset"},
    "DELETE /api/v1/skillsets/{name}/labels/{label}": {"invalid_label"},
    "DELETE /api/v1/skillsets/{name}/labels/{label}/rollout": {"invalid_label"},
    "POST /api/v1/skillsets/{name}/labels/{label}/rollback": {"invalid_label", "invalid_skillset"},
    "PUT /api/v1/label-policies/{label}": {"invalid_label", "invalid_policy"},
    "DELETE /api/v1/label-policies/{label}": {"invalid_label"},
    # A consumer's tools and MCP servers: names that are not blank, at most 500 of them, each at most
    # 200 characters (the index's are comma-separated in one parameter).
    "POST /api/v1/resolve": {"tools", "mcp_servers"},
    "GET /.well-known/agent-skills/index.json": {"tools", "mcp_servers"},
}


def _fields(errors: object) -> set[str]:
    """Every key in a (nested) `fields` object: `{"events": {"1": {"rating": [...]}}}` gives rating."""
    if not isinstance(errors, dict):
        return set()
    leaves = set()
    for key, value in errors.items():
        nested = _fields(value)
        leaves |= nested or {str(key)}
    return leaves


def positive_data_acceptance_but_unstated_rules(ctx, response, case):
    """schemathesis' positive_data_acceptance, except for a 400 that names only unstated rules."""
    allowed = UNSTATED_RULES.get(case.operation.label, set())
    if response.status_code == 400 and allowed:
        body = response.json()
        named = _fields(body.get("fields")) if body.get("error") == "invalid" else {body.get("error")}
        named = {str(name).split(".")[0] for name in named}  # `skill_versions.<name>` is skill_versions
        if named and named <= allowed:
            return None
    return positive_data_acceptance(ctx, response, case)


@pytest.fixture
def in_process():
    """Requests run in this thread: like Django's test client, they must not close the database
    connection that holds the test's transaction when they finish."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def registry_state(make_token):
    """A token with every scope, and a skill, a rule and a finished turn for paths to name."""
    user = user_with_role(ADMIN)
    script = [("scripts/run.sh", b"echo hi\n", True)]
    first = publish(SKILL, files=script, tags=["demo"])
    publish(SKILL, description="Does a demo thing, second edition.", files=script)
    label_move(skill=first.skill, label="production", version_number=1)
    ForceIncludeRule.objects.create(id=RULE_ID, name="conformance", pattern=r"\bdemo\b", skills=[SKILL])
    turn = AgentTurn.objects.create(
        id=TURN_ID, user=user, message="demo", model="offline", status=TurnStatus.SUCCEEDED, answer="Done."
    )
    TraceEvent.objects.create(turn=turn, seq=1, type="answer", at=timezone.now(), data={"text": "Done."})
    return {"Authorization": f"Bearer {make_token(list(TokenScope.values), user=user)}"}


@pytest.fixture
def discovery_on():
    """The discovery index publishes `production` (the skill above has it), so its operations
    answer with bodies to check, not only 404."""
    with override_settings(DISCOVERY_LABEL="production"):
        yield


@schema.parametrize()
@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@pytest.mark.django_db
def test_the_api_answers_as_its_schema_says(case, in_process, registry_state, discovery_on):
    case.call_and_validate(
        headers=registry_state,
        excluded_checks=[positive_data_acceptance],
        additional_checks=[positive_data_acceptance_but_unstated_rules],
    )
