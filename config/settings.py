"""Settings, all read from the environment (12-factor); `.env.example` lists every variable.

Defaults give a working development setup with nothing installed but Python: SQLite under
`var/`, Kombu's filesystem broker and a local-memory cache. Setting `DATABASE_URL` and
`REDIS_URL` switches to PostgreSQL and Redis.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

import environ
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
env.read_env(BASE_DIR / ".env", overwrite=False)

# Importing settings writes nothing: `make run` (config/local_state.py) creates VAR_DIR, its
# broker folders and the local secret before Django starts.
VAR_DIR = Path(env.str("VAR_DIR", default=str(BASE_DIR / "var")))


def _instance_digest(path: Path) -> str:
    """A short name for this instance's folders outside VAR_DIR (two checkouts never share one)."""
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]


# litellm fetches a price list at import unless told not to; we never want network at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEBUG = env.bool("DEBUG", default=False)
TESTING = env.bool("TESTING", default=False)

LOCAL_HOSTS = ["127.0.0.1", "localhost", "[::1]", "testserver"]
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=LOCAL_HOSTS)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# An instance reachable from other machines signs sessions with a secret it was given; one that
# only this machine can reach may use the one `make run` generated (or, before that ran, a
# development key: nobody else can send it a forged cookie).
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    public_hosts = sorted(set(ALLOWED_HOSTS) - set(LOCAL_HOSTS))
    if public_hosts and not TESTING:
        raise ImproperlyConfigured(
            f"ALLOWED_HOSTS names {', '.join(public_hosts)} but SECRET_KEY is not set: set SECRET_KEY "
            "to a long random value (python -c 'import secrets; print(secrets.token_urlsafe(50))')."
        )
    _secret_file = VAR_DIR / "secret_key"
    if _secret_file.is_file():
        SECRET_KEY = _secret_file.read_text().strip()
    else:
        SECRET_KEY = "insecure-development-key-do-not-use-in-production"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served locally, never from a CDN
    "django_htmx",
    "template_partials",
    "csp",
    "registry",
    "agents",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # before WhiteNoise, so static files (an SVG) get the policy too
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "registry.api.errors.UnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "registry.console.access.console_context",
                "csp.context_processors.nonce",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, worker, CLI, tests) write the one file. WAL lets readers go on while
    # one writer commits. A transaction that reads and then writes must take the write lock at
    # BEGIN (IMMEDIATE): taken at its first write instead, SQLite refuses it at once with "database
    # is locked" when another writer got there first, since waiting could deadlock; at BEGIN it
    # waits its turn, up to `timeout` seconds. synchronous=NORMAL is WAL's durable-enough setting:
    # a power cut may lose the last commits, never corrupt the file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
# Reusing connections saves a new PostgreSQL backend per request (health checks keep them sane).
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    # A cache outage degrades to database reads instead of failing requests (config/cache.py);
    # a cache slower than these timeouts is no faster than the database behind it.
    CACHES = {
        "default": {
            "BACKEND": "config.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login throttle (registry/services/logins.py): this many failed logins for one username, or from
# one IP address, within the window lock further attempts (the right password too) until it lapses.
LOGIN_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=10)
# Across usernames from one address: higher, so a shared office address is not locked by one
# forgetful user, yet a client spraying guesses at many accounts is.
LOGIN_IP_FAILURE_LIMIT = env.int("LOGIN_IP_FAILURE_LIMIT", default=50)
LOGIN_FAILURE_WINDOW_SECONDS = env.int("LOGIN_FAILURE_WINDOW_SECONDS", default=15 * 60)
# The throttle's backend in place of Django's ModelBackend (same checks, plus the lockout).
AUTHENTICATION_BACKENDS = ["registry.console.login.ThrottledModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

# --- Response headers and TLS -----------------------------------------------------------
# The browser loads nothing from another origin: an image in a SKILL.md or a model's answer
# (`![x](https://elsewhere/pixel.png)`) would otherwise tell that host who read it, and when.
# Scripts are files under static/ (htmx, console.js); an inline <script> must carry the
# request's nonce, `{{ CSP_NONCE }}` in templates. Styles may be inline: templates use style=""
# and editors inject <style> elements; a nonce in style-src would disable 'unsafe-inline' for them.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    }
}
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

# Behind TLS (docs/operators/tls.md). Everything is off by default: the development
# server and `make run` speak plain HTTP on 127.0.0.1.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
# Cookies only over HTTPS; on by default wherever plain HTTP is redirected to HTTPS anyway.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=SECURE_SSL_REDIRECT)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
if SECURE_HSTS_SECONDS < 0:
    raise ImproperlyConfigured(f"SECURE_HSTS_SECONDS={SECURE_HSTS_SECONDS}: it must be 0 (no HSTS) or more.")
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# The header a TLS-terminating proxy sets to `https` (e.g. X-Forwarded-Proto). Trusted only when
# named: a client reaching the app directly could send it to pass a plain request off as HTTPS.
_proxy_ssl_header = env.str("SECURE_PROXY_SSL_HEADER", default="").strip()
if _proxy_ssl_header:
    if not re.fullmatch(r"[A-Za-z0-9-]+", _proxy_ssl_header):
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER={_proxy_ssl_header!r}: give the header's name, e.g. X-Forwarded-Proto."
        )
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")

# --- Celery -----------------------------------------------------------------------------
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    # An unacknowledged message (its worker's main process died) comes back after this many
    # seconds. Turns do not wait for it: the reaper requeues a turn once its lease lapsed, and a
    # late copy of the message finds the turn taken or finished and is dropped.
    _visibility = env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)
    if _visibility < 1:
        raise ImproperlyConfigured(f"CELERY_VISIBILITY_TIMEOUT={_visibility}: it must be greater than 0.")
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
        "visibility_timeout": _visibility,
        "unacked_restore_interval": max(1, min(10, _visibility // 2)),
        "unacked_restore_throttle": 1,
    }
else:
    # No Redis: Kombu's filesystem transport lets web and worker share a queue via var/ (its
    # folders are made by config/local_state.py).
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"  # Kombu's, publishing each message whole
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),  # default is ./control in the working dir
        "store_processed": False,
        "polling_interval": 0.1,  # Kombu's default of 1 s would add up to a second before a turn starts
    }
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=600)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 30
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes the database connection around every task unless this is set:
# a new connection per turn, paid in the worker's time. Set, it closes only every so many
# tasks, and agents/tasks.py applies CONN_MAX_AGE and the health check around each task instead,
# as Django does around each request.
CELERY_DB_REUSE_MAX = 1000
# Celery beat (the Procfile's `beat` process, one per deployment) runs the rollout guard: it
# compares each guarded rollout's canary with its stable version and rolls a worse one back.
ROLLOUT_GUARD_SECONDS = env.float("ROLLOUT_GUARD_SECONDS", default=60.0)
# ... and rescans what labels serve when the scanner or its rule pack changed (docs/operators/scans.md).
SCAN_RESCAN_SECONDS = env.float("SCAN_RESCAN_SECONDS", default=3600.0)
CELERY_BEAT_SCHEDULE = {
    "rollout-guard": {"task": "registry.tasks.label_rollouts_guard_task", "schedule": ROLLOUT_GUARD_SECONDS},
    "scan-rescan": {"task": "registry.tasks.versions_rescan_task", "schedule": SCAN_RESCAN_SECONDS},
}
# Beat remembers when each entry last ran in a file of its own; it lives with the instance's
# other state, so a VAR_DIR elsewhere (or two instances side by side) never shares or misses it.
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- REST API ---------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "registry.api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "registry.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["registry.api.throttle.RegistryRateThrottle"],
}
# Requests per token (or console user), shared by all processes through Redis; "off" for none.
# The default guards against a runaway client (1,000 a second for a whole minute); it is not a
# quota. Lower it to share a registry fairly between clients.
# A malformed rate stops the start-up (registry/apps.py), not the first request.
API_THROTTLE_RATE = env.str("API_THROTTLE_RATE", default="60000/min")
# The OpenAPI schema and Swagger UI need a console login or a bearer token unless this is true.
API_DOCS_PUBLIC = env.bool("API_DOCS_PUBLIC", default=False)
SPECTACULAR_SETTINGS = {
    "TITLE": "Skill Registry API",
    "DESCRIPTION": "The system of record for agent skills, force-include rules and usage analytics.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Unused: config/urls.py serves the schema and docs through registry/api/docs.py (API_DOCS_PUBLIC).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A webhook's `events` and a delivery's `event` are one choice set: one schema component.
    "ENUM_NAME_OVERRIDES": {"WebhookEventEnum": "registry.models.WebhookEvent"},
}

# --- Skill Registry ---------------------------------------------------------------------
BUNDLED_SKILLS_DIR = Path(env.str("BUNDLED_SKILLS_DIR", default=str(BASE_DIR / "skills")))
SKILL_MD_MAX_BYTES = env.int("SKILL_MD_MAX_BYTES", default=256 * 1024)
SKILL_FILE_MAX_BYTES = env.int("SKILL_FILE_MAX_BYTES", default=10 * 1024 * 1024)
SKILL_BUNDLE_MAX_BYTES = env.int("SKILL_BUNDLE_MAX_BYTES", default=50 * 1024 * 1024)
SKILL_BUNDLE_MAX_FILES = env.int("SKILL_BUNDLE_MAX_FILES", default=500)
DATA_UPLOAD_MAX_MEMORY_SIZE = SKILL_BUNDLE_MAX_BYTES + 1024 * 1024
# A folder picked in the console arrives as one upload per file, debris (.git) included and
# dropped only after: allow as many as a zip of the skill may hold entries.
DATA_UPLOAD_MAX_NUMBER_FILES = 4 * SKILL_BUNDLE_MAX_FILES + 100
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# A skillset version lists at most this many member skills.
SKILLSET_MAX_MEMBERS = env.int("SKILLSET_MAX_MEMBERS", default=200)
MAX_SKILLS_IN_PROMPT = env.int("MAX_SKILLS_IN_PROMPT", default=150)
MAX_PROMPT_CHARS = env.int("MAX_PROMPT_CHARS", default=18000)
RULE_PATTERN_MAX_LENGTH = env.int("RULE_PATTERN_MAX_LENGTH", default=1000)
# Rule patterns are matched against at most this many characters of the query (registry/matching/patterns.py),
# so the cost of one match is bounded whatever the agent was sent.
RULE_QUERY_MAX_CHARS = env.int("RULE_QUERY_MAX_CHARS", default=10_000)
# A pattern whose worst-case probe (a query of RULE_QUERY_MAX_CHARS built from its own characters)
# takes longer than this much CPU time is refused when the rule is saved.
RULE_PATTERN_PROBE_MS = env.int("RULE_PATTERN_PROBE_MS", default=50)
# One resolve stops matching rules past this many seconds and says which rules it skipped.
RESOLVE_MAX_SECONDS = env.float("RESOLVE_MAX_SECONDS", default=2.0)
# On PostgreSQL each process LISTENs for registry changes (one extra idle connection) so cached
# reads skip a query per request; off, every read asks the database (registry/readmodel/generation.py).
REGISTRY_LISTEN = env.bool("REGISTRY_LISTEN", default=True)
# The label whose enabled skills `/.well-known/agent-skills/` publishes to anyone, without a
# token (the Agent Skills discovery index `npx skills add` reads); unset, those URLs are 404.
DISCOVERY_LABEL = env.str("DISCOVERY_LABEL", default="").strip() or None
# A label name as registry/services/labels.py defines it (settings import no app code).
if DISCOVERY_LABEL is not None and not re.fullmatch(r"[a-z0-9_.-]{1,36}", DISCOVERY_LABEL):
    raise ImproperlyConfigured(
        f"DISCOVERY_LABEL={DISCOVERY_LABEL!r}: it must be a label name (1-36 of a-z, 0-9, '_', '.', '-'), "
        "e.g. production."
    )

# --- Signed releases --------------------------------------------------------------------
# The registry's Ed25519 signing key (PEM, 0600), made on first use when missing; `manage.py keys
# rotate` replaces it. Its public half, and every older one, are at
# /.well-known/skill-registry/keys.json (registry/services/attestations.py).
SIGNING_KEY_FILE = Path(env.str("SIGNING_KEY_FILE", default=str(VAR_DIR / "signing_key.pem")))

# --- Webhooks ---------------------------------------------------------------------------
# Off, a webhook URL that resolves to a loopback, private, link-local or other non-public address
# is refused when the hook is created and again before each delivery (SSRF). On only where the
# receivers are on the operator's own network.
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env.bool("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", default=False)
# Connect and read timeout of one delivery attempt, in seconds.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=5.0)
# Attempts per delivery; a failed attempt waits WEBHOOK_RETRY_BASE_SECONDS * 2^(attempt - 1),
# at most WEBHOOK_RETRY_MAX_SECONDS, before the next.
WEBHOOK_MAX_ATTEMPTS = env.int("WEBHOOK_MAX_ATTEMPTS", default=6)
WEBHOOK_RETRY_BASE_SECONDS = env.float("WEBHOOK_RETRY_BASE_SECONDS", default=10.0)
WEBHOOK_RETRY_MAX_SECONDS = env.float("WEBHOOK_RETRY_MAX_SECONDS", default=600.0)
# Deliveries go to a Celery queue of their own, served by the Procfile's `webhooks` worker, which
# runs at most WEBHOOK_CONCURRENCY at once (the Procfile passes it as --concurrency): a receiver
# that answers slowly holds a delivery process, never one a turn needs.
WEBHOOK_QUEUE = "webhooks"
WEBHOOK_CONCURRENCY = env.int("WEBHOOK_CONCURRENCY", default=4)
CELERY_TASK_ROUTES = {"registry.tasks.webhook_delivery_send_task": {"queue": WEBHOOK_QUEUE}}

# --- Scans ------------------------------------------------------------------------------
# Every published version is scanned (docs/operators/scans.md) on a queue of its own, served by the
# Procfile's `scans` worker: publishing never waits for a scan, and a slow scan never holds a turn.
SCAN_QUEUE = "scans"
SCAN_CONCURRENCY = env.int("SCAN_CONCURRENCY", default=1)
# A scan that runs longer is killed and recorded as `error` (never `clean`).
SCAN_TIMEOUT_SECONDS = env.float("SCAN_TIMEOUT_SECONDS", default=120.0)
# Optional: the scanner's LLM analyzer with this model, one of AGENT_MODELS (checked at start-up,
# registry/checks.py); unset, only the offline analyzers run.
SCAN_LLM_MODEL = env.str("SCAN_LLM_MODEL", default="").strip()
# The scanner process's CPU priority below the web server's (`nice`, 0 to 19): where they share
# CPUs, publishes and reads go first; on a saturated machine a high value starves scans.
SCAN_NICENESS = env.int("SCAN_NICENESS", default=10)
if not 0 <= SCAN_NICENESS <= 19:
    raise ImproperlyConfigured(f"SCAN_NICENESS={SCAN_NICENESS}: it must be from 0 to 19.")
CELERY_TASK_ROUTES["registry.tasks.version_scan_task"] = {"queue": SCAN_QUEUE}

# --- Agent runtime ----------------------------------------------------------------------
AGENT_MODEL = env.str("AGENT_MODEL", default="offline").strip()
AGENT_API_BASE = env.str("AGENT_API_BASE", default="")
AGENT_API_KEY = env.str("AGENT_API_KEY", default="")
AGENT_ALLOW_SCRIPTED = env.bool("AGENT_ALLOW_SCRIPTED", default=DEBUG or TESTING)
# The only models a turn may name, through the API and the playground alike
# (agents.turns.services.agent_model_check), and so the only ones a label policy's eval gate may ask
# for. Unset: AGENT_MODEL, `offline`, and `scripted` where AGENT_ALLOW_SCRIPTED is on (filled in
# below, once AGENT_MODEL is checked). A listed `scripted` is still refused while
# AGENT_ALLOW_SCRIPTED is off.
AGENT_MODELS = [model.strip() for model in env.list("AGENT_MODELS", default=[]) if model.strip()]
AGENT_MAX_ITERATIONS = env.int("AGENT_MAX_ITERATIONS", default=10)
AGENT_MAX_TOTAL_TOKENS = env.int("AGENT_MAX_TOTAL_TOKENS", default=200_000)
AGENT_MAX_SECONDS = env.float("AGENT_MAX_SECONDS", default=300.0)
AGENT_EXTRA_TOOLS = env.list("AGENT_EXTRA_TOOLS", default=[])
AGENT_MAX_TOOL_CALLS_PER_STEP = env.int("AGENT_MAX_TOOL_CALLS_PER_STEP", default=50)
# A running turn's lease, renewed by its worker every third of it; a worker that dies stops
# renewing, and every worker's reaper (every AGENT_TURN_REAPER_SECONDS) requeues the turn once
# the lease lapsed — at most AGENT_TURN_MAX_TAKEOVERS times, then it fails with a readable error.
AGENT_TURN_LEASE_SECONDS = env.float("AGENT_TURN_LEASE_SECONDS", default=30.0)
AGENT_TURN_REAPER_SECONDS = env.float("AGENT_TURN_REAPER_SECONDS", default=10.0)
AGENT_TURN_MAX_TAKEOVERS = env.int("AGENT_TURN_MAX_TAKEOVERS", default=3)
# Each turn's temporary files (run_skill's folders) live under one folder per turn, removed when
# the turn's attempt ends; the reaper removes those of processes that died. Not under VAR_DIR: a
# root worker's sandbox runs as uid 65534, which must reach the run's folder, and VAR_DIR is
# private (0700). The default is one folder per instance in the system's temporary folder
# (agents/turns/services.py checks that it is the worker's own before using it).
AGENT_SCRATCH_ROOT = Path(
    env.str(
        "AGENT_SCRATCH_ROOT",
        default=str(Path(tempfile.gettempdir()) / f"skill-registry-scratch-{_instance_digest(VAR_DIR)}"),
    )
)
# The longest message a turn accepts (a pasted log or document); what does not fit the model's
# input is trimmed per call by the runtime (agents/runtime/context.py), never refused.
AGENT_MAX_MESSAGE_CHARS = env.int("AGENT_MAX_MESSAGE_CHARS", default=200_000)
AGENT_WORKSPACE_ROOT = Path(env.str("AGENT_WORKSPACE_ROOT", default=str(VAR_DIR / "workspaces")))
# Evals (docs/authors/evals.md): how many of one run's turns are queued or running at once, and the
# model that grades `judge` checks through litellm (unset: a judge check is an error, not a pass).
EVAL_CONCURRENCY = env.int("EVAL_CONCURRENCY", default=4)
# What starting runs may queue: runs queued or running per user, and eval turns not yet graded
# across every run; past either, a new run is refused with 429 until earlier ones end.
EVAL_MAX_ACTIVE_RUNS_PER_USER = env.int("EVAL_MAX_ACTIVE_RUNS_PER_USER", default=3)
EVAL_MAX_QUEUED_TURNS = env.int("EVAL_MAX_QUEUED_TURNS", default=5000)
EVAL_JUDGE_MODEL = env.str("EVAL_JUDGE_MODEL", default="").strip()
# The catalog's routing report (docs/analysts/catalog-routing.md): pairs of skills at least this
# similar (0..1, the cosine of their term weights in resolve's index) are listed as overlapping,
# and the editor warns about them; after a publish, label move, rule or suite change the report is
# recomputed by a worker once this many seconds have passed without another (CATALOG_ROUTING_BACKGROUND
# off: only when asked); a catalog of at most CATALOG_ROUTING_INLINE_MAX trigger cases and skills is
# computed in the request that asks, a larger one is answered 202 until the worker has it.
CATALOG_OVERLAP_THRESHOLD = env.float("CATALOG_OVERLAP_THRESHOLD", default=0.3)
if not 0 < CATALOG_OVERLAP_THRESHOLD <= 1:
    raise ImproperlyConfigured(f"CATALOG_OVERLAP_THRESHOLD={CATALOG_OVERLAP_THRESHOLD!r}: it must be in (0, 1].")
CATALOG_ROUTING_BACKGROUND = env.bool("CATALOG_ROUTING_BACKGROUND", default=True)
CATALOG_ROUTING_DEBOUNCE_SECONDS = env.float("CATALOG_ROUTING_DEBOUNCE_SECONDS", default=30.0)
CATALOG_ROUTING_INLINE_MAX = env.int("CATALOG_ROUTING_INLINE_MAX", default=1000)
# The drift watch (docs/authors/model-checks.md): beat re-runs production's eval suites on
# AGENT_MODEL on this cron schedule ("minute hour day-of-month month day-of-week", UTC) and raises
# `catalog.drift` when a skill got worse than its last accepted run. Empty: off.
CATALOG_WATCH_CRON = env.str("CATALOG_WATCH_CRON", default="").strip()
if CATALOG_WATCH_CRON:
    from celery.schedules import crontab  # only when the watch is on

    _cron = CATALOG_WATCH_CRON.split()
    try:
        if len(_cron) != 5:
            raise ValueError("five fields")
        _minute, _hour, _day_of_month, _month, _day_of_week = _cron
        _watch_schedule = crontab(
            minute=_minute, hour=_hour, day_of_month=_day_of_month, month_of_year=_month, day_of_week=_day_of_week
        )
    except ValueError as _error:
        raise ImproperlyConfigured(
            f"CATALOG_WATCH_CRON={CATALOG_WATCH_CRON!r}: give five cron fields, e.g. '0 3 * * *' ({_error})."
        ) from None
    CELERY_BEAT_SCHEDULE["catalog-watch"] = {"task": "agents.tasks.catalog_watch_task", "schedule": _watch_schedule}
# How run_skill and code skills confine a skill's script (agents/runtime/sandbox.py,
# docs/operators/sandbox.md): `bwrap`, or `none` to run scripts unconfined as the worker's user. There is
# no silent fallback: with `bwrap` and no working bubblewrap, run_skill refuses to run scripts.
RUN_SKILL_SANDBOX = env.str("RUN_SKILL_SANDBOX", default="bwrap").strip().lower()
if RUN_SKILL_SANDBOX not in ("bwrap", "none"):
    raise ImproperlyConfigured(f"RUN_SKILL_SANDBOX must be 'bwrap' or 'none', not {RUN_SKILL_SANDBOX!r}.")
# The memory one skill script run may hold with everything it starts (its files, shared memory
# and the kernel's memory for them included), in a cgroup of its own where the worker can make
# one (agents/runtime/cgroups.py); the host needs this much per concurrent turn running a script.
RUN_SKILL_MEMORY_BYTES = env.int("RUN_SKILL_MEMORY_BYTES", default=512 * 1024 * 1024)

# A model a turn could not use (a URL as its name, a scripted judge where scripted is off) stops
# the start-up too: agents/apps.py checks them with the turns' own rule.
if AGENT_MODELS and AGENT_MODEL not in AGENT_MODELS:
    raise ImproperlyConfigured(
        f"AGENT_MODEL={AGENT_MODEL!r} is not in AGENT_MODELS ({', '.join(AGENT_MODELS)}): "
        "a turn that names no model uses AGENT_MODEL, so list it."
    )
# `offline` and `scripted` are the runtime's built-in models (agents/model_strings.py); settings
# import nothing from the apps, so they are named here.
_default_models = [AGENT_MODEL, "offline", *(["scripted"] if AGENT_ALLOW_SCRIPTED else [])]
AGENT_MODELS = list(dict.fromkeys(AGENT_MODELS or _default_models))

PRODUCTION = env.bool("PRODUCTION", default=False)
if AGENT_ALLOW_SCRIPTED and not (DEBUG or TESTING) and PRODUCTION:
    raise ImproperlyConfigured("AGENT_ALLOW_SCRIPTED must be false when PRODUCTION is set.")

# Every limit is validated here, at start-up: zero or less would refuse everything (or nothing)
# without saying why, at the first request that reaches it.
for _name in (
    "LOGIN_FAILURE_LIMIT",
    "LOGIN_IP_FAILURE_LIMIT",
    "LOGIN_FAILURE_WINDOW_SECONDS",
    "CELERY_TASK_SOFT_TIME_LIMIT",
    "SKILL_MD_MAX_BYTES",
    "SKILL_FILE_MAX_BYTES",
    "SKILL_BUNDLE_MAX_BYTES",
    "SKILL_BUNDLE_MAX_FILES",
    "MAX_PROMPT_CHARS",
    "RULE_PATTERN_MAX_LENGTH",
    "RULE_QUERY_MAX_CHARS",
    "RULE_PATTERN_PROBE_MS",
    "RESOLVE_MAX_SECONDS",
    "AGENT_MAX_ITERATIONS",
    "AGENT_MAX_TOTAL_TOKENS",
    "AGENT_MAX_SECONDS",
    "AGENT_MAX_TOOL_CALLS_PER_STEP",
    "AGENT_TURN_LEASE_SECONDS",
    "AGENT_TURN_REAPER_SECONDS",
    "ROLLOUT_GUARD_SECONDS",
    "AGENT_MAX_MESSAGE_CHARS",
    "EVAL_CONCURRENCY",
    "EVAL_MAX_ACTIVE_RUNS_PER_USER",
    "EVAL_MAX_QUEUED_TURNS",
    "CATALOG_ROUTING_DEBOUNCE_SECONDS",
    "CATALOG_ROUTING_INLINE_MAX",
    "RUN_SKILL_MEMORY_BYTES",
    "WEBHOOK_TIMEOUT_SECONDS",
    "WEBHOOK_MAX_ATTEMPTS",
    "WEBHOOK_RETRY_BASE_SECONDS",
    "WEBHOOK_RETRY_MAX_SECONDS",
    "WEBHOOK_CONCURRENCY",
    "SCAN_CONCURRENCY",
    "SCAN_TIMEOUT_SECONDS",
    "SCAN_RESCAN_SECONDS",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name}={globals()[_name]!r}: it must be greater than 0.")
# 0 means something for these: list only forced skills; end a turn whose lease lapsed instead of requeueing it.
for _name in ("MAX_SKILLS_IN_PROMPT", "AGENT_TURN_MAX_TAKEOVERS"):
    if globals()[_name] < 0:
        raise ImproperlyConfigured(f"{_name}={globals()[_name]!r}: it must be 0 or more.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "LiteLLM": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        # /mcp serves each request with a session manager of its own, which logs its start and stop.
        "mcp": {"level": "WARNING"},
    },
}
