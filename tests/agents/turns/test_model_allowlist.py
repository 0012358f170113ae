"""A turn may name only the models the operator listed in AGENT_MODELS, through the API, the
playground and the worker alike; a model string that embeds a URL is refused even when listed,
and AGENT_API_KEY / AGENT_API_BASE go only to AGENT_MODEL's provider."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from rest_framework.test import APIClient

from agents.model_strings import model_string_problem
from agents.models import AgentTurn
from agents.turns import services
from registry.errors import ApplicationError
from registry.roles import AUTHOR
from tests.factories import user_with_role
from tests.test_settings import start

pytestmark = pytest.mark.django_db

SCRIPT = [{"content": "hello", "tool_calls": []}]
CLAUDE = "anthropic/claude-3-5-haiku-latest"
# What an outside review sent: the first made the worker POST the system prompt to the URL, the
# second sent the operator's key to localhost:11434.
REFUSED = [
    "oobabooga/http://127.0.0.1:8949/x",
    "ollama_chat/llama3",
    "huggingface/https://evil.example/model",
    "openai/gpt-4o",
    "offline/default",
    "OFFLINE",
]


@pytest.fixture
def api(make_token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['agent:run'])}")
    return client


def post_turn(client: APIClient, **body):
    return client.post("/api/v1/agent/turns", {"message": "hi", **body}, format="json")


class RecordingServer(BaseHTTPRequestHandler):
    """Stands where a forged model string points: counts what reaches it."""

    hits: list[str] = []

    def do_POST(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[str]:
    """The base URL of a local server that records every request it gets."""
    RecordingServer.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingServer)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


# --- the API --------------------------------------------------------------------------------


@pytest.mark.parametrize("model", REFUSED)
def test_a_model_not_listed_is_a_400_naming_model_and_the_allowed_ones(api, model):
    response = post_turn(api, model=model)

    assert response.status_code == 400
    body = response.json()
    assert "model" in body["fields"]
    assert body["allowed_models"] == ["offline", "scripted"], "the default: AGENT_MODEL, offline, scripted"
    assert "offline, scripted" in body["detail"]
    assert not AgentTurn.objects.exists()


def test_a_model_that_embeds_a_url_is_refused_even_when_listed(api, settings, listener):
    model = f"oobabooga/{listener}/x"
    settings.AGENT_MODELS = ["offline", model]

    response = post_turn(api, model=model)

    assert response.status_code == 400
    assert "embeds a URL" in response.json()["detail"]
    assert response.json()["allowed_models"] == ["offline", model]
    assert not AgentTurn.objects.exists()


def test_only_the_listed_models_are_accepted(api, settings):
    settings.AGENT_MODELS = ["offline", CLAUDE]

    accepted = post_turn(api, model=CLAUDE)
    defaulted = post_turn(api)
    scripted = post_turn(api, model="scripted", script=SCRIPT)

    assert accepted.status_code == 202, accepted.json()
    assert defaulted.status_code == 202, defaulted.json()
    assert [turn.model for turn in AgentTurn.objects.order_by("created_at")] == [CLAUDE, "offline"]
    assert scripted.status_code == 400, "AGENT_ALLOW_SCRIPTED is on here, but AGENT_MODELS leaves scripted out"
    assert scripted.json()["allowed_models"] == ["offline", CLAUDE]


def test_a_listed_scripted_model_is_still_refused_while_scripted_is_not_allowed(api, settings):
    settings.AGENT_ALLOW_SCRIPTED = False
    settings.AGENT_MODELS = ["offline", "scripted"]

    response = post_turn(api, model="scripted", script=SCRIPT)

    assert response.status_code == 400
    assert response.json()["allowed_models"] == ["offline"]


# --- the worker -----------------------------------------------------------------------------


def test_a_queued_turn_whose_model_is_not_allowed_is_refused_by_the_worker(listener):
    """A turn queued before AGENT_MODELS changed (or written by anything but the service) never
    reaches litellm: the run refuses it and the URL hears nothing."""
    turn = AgentTurn.objects.create(message="hi", model=f"oobabooga/{listener}/x")
    claimed = services.agent_turn_claim(turn_id=str(turn.pk))
    assert claimed is not None

    with pytest.raises(ApplicationError) as refused:
        services.agent_turn_run(claimed=claimed)

    assert refused.value.fields.keys() == {"model"}
    assert RecordingServer.hits == []


def test_the_operators_key_and_base_go_only_to_agent_models_provider(settings):
    settings.AGENT_MODEL = "openai/gpt-4o-mini"
    settings.AGENT_MODELS = ["openai/gpt-4o-mini", "gpt-4o", CLAUDE, "offline"]
    settings.AGENT_API_KEY, settings.AGENT_API_BASE = "sk-operator", "https://llm.internal/v1"

    def options(model: str) -> dict:
        return services._llm_options(AgentTurn(model=model))

    given = {"api_key": "sk-operator", "api_base": "https://llm.internal/v1"}
    assert options("openai/gpt-4o-mini") == given
    assert options("gpt-4o") == given, "litellm sends gpt-4o to openai too"
    assert options(CLAUDE) == {}, "anthropic reads ANTHROPIC_API_KEY, never the operator's OpenAI key"
    assert options("offline") == {}


# --- the playground -------------------------------------------------------------------------


@pytest.fixture
def author_client(client):
    client.force_login(user_with_role(AUTHOR))
    return client


def send(client, **fields):
    return client.post("/playground/", {"message": "hello there", **fields})


def test_the_playground_offers_and_accepts_the_listed_models(author_client, settings):
    settings.AGENT_MODELS = ["offline", CLAUDE]
    html = author_client.get("/playground/").content.decode()

    assert f'value="{CLAUDE}"' in html and 'value="offline"' in html
    assert 'value="scripted"' not in html and 'name="script"' not in html

    response = send(author_client, model=CLAUDE)
    assert response.status_code == 302
    assert AgentTurn.objects.get().model == CLAUDE


@pytest.mark.parametrize("model", [*REFUSED, "scripted"])
def test_a_forged_playground_post_naming_an_unlisted_model_is_refused(author_client, settings, model):
    settings.AGENT_MODELS = ["offline", CLAUDE]
    response = send(author_client, model=model, script="[]")

    assert response.status_code == 400
    assert "Choose one of the listed models" in response.content.decode()
    assert not AgentTurn.objects.exists()


def test_a_listed_model_that_embeds_a_url_is_refused_by_the_playground_too(author_client, settings):
    model = "oobabooga/http://127.0.0.1:8949/x"
    settings.AGENT_MODELS = ["offline", model]
    response = send(author_client, model=model)

    assert response.status_code == 400
    assert "embeds a URL" in response.content.decode()
    assert not AgentTurn.objects.exists()


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variables", "words"),
    [
        ({"AGENT_MODELS": "offline,oobabooga/http://127.0.0.1:8949/x"}, "AGENT_MODELS names"),
        ({"AGENT_MODEL": "huggingface/https://evil.example/m"}, "AGENT_MODEL names"),
        ({"AGENT_MODELS": "offline, openai/gpt 4o"}, "whitespace"),
        ({"AGENT_MODELS": "openai/gpt-4o-mini"}, "AGENT_MODEL='offline' is not in AGENT_MODELS"),
    ],
)
def test_a_model_list_that_names_a_url_or_leaves_out_agent_model_stops_the_start_up(tmp_path, variables, words):
    started = start(tmp_path, **variables)

    assert started.returncode != 0
    assert "ImproperlyConfigured" in started.stderr and words in started.stderr


def test_a_model_list_of_model_names_starts(tmp_path):
    started = start(
        tmp_path, AGENT_MODEL="openai/gpt-4o-mini", AGENT_MODELS="openai/gpt-4o-mini, offline, ollama/llama3.1:8b"
    )
    assert started.returncode == 0, started.stderr


@pytest.mark.parametrize(
    "model",
    ["openai/gpt-4o-mini", "ollama/llama3.1:8b", "bedrock/anthropic.claude-3-haiku-20240307-v1:0", "azure/my-deploy"],
)
def test_a_model_name_is_fine(model):
    assert model_string_problem(model) is None


@pytest.mark.parametrize(
    "model",
    ["http://127.0.0.1/x", "oobabooga/HTTP://127.0.0.1/x", "oobabooga/https:evil", "a\nb", "a b", "x\u200b", ""],
)
def test_a_url_or_a_control_character_is_not_a_model_name(model):
    assert model_string_problem(model) is not None
