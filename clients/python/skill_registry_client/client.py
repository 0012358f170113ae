"""`Client`: what an agent asks the registry each turn, answered from a cache that the registry
revalidates with ETags, and kept serving when the registry cannot be reached."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from skill_registry_client.attestation import SignatureRefused, envelope_verify, files_check
from skill_registry_client.cache import Entry, ResponseCache
from skill_registry_client.errors import RegistryError, RegistryUnavailable
from skill_registry_client.folders import SKILL_MD, SkillFile, bundle_from_zip
from skill_registry_client.releases import KeySet, attestation_get
from skill_registry_client.reporter import UsageReporter
from skill_registry_client.transport import Answer, Transport, skill_path

Check = Callable[[Answer], None]


@dataclass(frozen=True)
class Resolution:
    """`POST /resolve`'s answer for one turn. `stale` is True when the registry could not be
    reached and this is the last answer it gave for the same request."""

    skills: list[dict]
    prompt_block: str
    instructions: list[str]
    fired_rules: list[dict]
    etag: str
    stale: bool
    label: str | None = None
    warnings: list[str] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)


@dataclass
class CacheStats:
    hits: int = 0  # answered from the cache within its ttl, no request
    revalidated: int = 0  # the registry answered 304
    fetched: int = 0  # the registry answered 200
    background: int = 0  # revalidations started while a stale copy was served
    stale: int = 0  # served after the registry could not be reached


class Client:
    """Client(base_url, token, cache_dir=None, ttl=60).

    An answer younger than `ttl` seconds is served from memory without a request. An older one
    is served at once while a background request revalidates it (stale-while-revalidate) for
    `stale_while_revalidate` more seconds; after that a call revalidates before answering, with
    If-None-Match, so an unchanged answer costs a 304. With `cache_dir` answers also outlive the
    process. When the registry cannot be reached, the last good answer comes back (`stale=True`
    on a `Resolution`); with nothing cached, `RegistryUnavailable` is raised.

    `skill_md` and `files` check what they download against the registry's signed attestation of
    the version served, as `skillreg pull` does, and raise `SignatureRefused` naming the file for
    bytes it does not vouch for. The registry's keys are pinned from keys.json on first use and
    kept for the client's life (afterwards keys.json may only narrow them, or add a key a trusted
    one endorsed); pass `trusted_keys` (keyid -> keys.json entry, e.g. skills.lock's `keys`) to
    pin them yourself. `verify_signatures=False` turns the check off.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        cache_dir: str | None = None,
        ttl: float = 60,
        *,
        stale_while_revalidate: float = 300,
        timeout: float = 10.0,
        report_batch_size: int = 100,
        report_interval: float = 2.0,
        verify_signatures: bool = True,
        trusted_keys: Mapping[str, Mapping] | None = None,
    ) -> None:
        self.ttl = ttl
        self.verify_signatures = verify_signatures
        self.stale_while_revalidate = stale_while_revalidate
        self.transport = Transport(base_url, token, timeout=timeout)
        scope = f"{self.transport.base_url}\n{hashlib.sha256(token.encode()).hexdigest()}"
        self.cache = ResponseCache(cache_dir, scope=scope)
        self.stats = CacheStats()
        self.reporter = UsageReporter(self.transport, batch_size=report_batch_size, interval=report_interval)
        self._revalidating: set[str] = set()
        self._lock = threading.Lock()
        self.keys: dict[str, dict] = {keyid: dict(entry) for keyid, entry in (trusted_keys or {}).items()}
        self._keyset = KeySet(self.transport, self)

    # --- reads ---------------------------------------------------------------------------------

    def resolve(self, query: str, label: str | None = None, **context: Any) -> Resolution:
        """Skills, prompt block, rule instructions and fired rules for one turn. Keyword arguments
        are the turn's context (toolName=..., error=..., taskDescription=..., command=...)."""
        body = {"query": query, "label": label, "context": context}
        entry, stale = self._get(("POST", "resolve", None, body), parse=json.loads)
        answer = entry.parsed
        return Resolution(
            skills=answer["skills"],
            prompt_block=answer["prompt_block"],
            instructions=answer["instructions"],
            fired_rules=answer["fired_rules"],
            etag=entry.etag,
            stale=stale,
            label=answer.get("label"),
            warnings=answer.get("warnings", []),
            raw=answer,
        )

    def skill_md(self, name: str, label: str | None = None, *, version: int | None = None) -> str:
        """The skill's SKILL.md text, exactly as published."""
        params = {"label": label, "version": version}

        def signed(answer: Answer) -> None:
            self._check_signed(name, answer, {SKILL_MD: hashlib.sha256(answer.body).hexdigest()}, every=False)

        request = ("GET", skill_path(name, SKILL_MD), params, None)
        entry, _ = self._get(request, parse=lambda b: b.decode("utf-8"), check=signed)
        return entry.parsed

    def files(self, name: str, label: str | None = None, *, version: int | None = None) -> list[SkillFile]:
        """Every file of the skill, SKILL.md first: path, bytes, executable bit, link target."""
        params = {"label": label, "version": version}

        def signed(answer: Answer) -> None:
            files = {f.path: f.sha256 for f in bundle_from_zip(name, answer.body).files}
            self._check_signed(name, answer, files, every=True)

        request = ("GET", skill_path(name, "bundle.zip"), params, None)
        entry, _ = self._get(request, parse=lambda b: list(bundle_from_zip(name, b).files), check=signed)
        return entry.parsed

    def _check_signed(self, name: str, answer: Answer, files: dict[str, str], *, every: bool) -> None:
        """Refuse (SignatureRefused, naming the file) a download the registry's signed statement
        of the version it served does not vouch for; nothing is cached then."""
        if not self.verify_signatures:
            return
        served = answer.headers.get("X-Skill-Version") or ""
        if not served.isdigit():
            raise SignatureRefused(
                f"{name}: the registry did not say which version it served, so its signature cannot be checked.",
                skill=name,
            )
        version = int(served)
        envelope = attestation_get(self.transport, name, version=version, source=None)
        try:
            verified = envelope_verify(envelope, self._keyset.trusted(), skill=name)
        except SignatureRefused:
            # A long-lived client may predate a key rotation: read keys.json again, once.
            self._keyset.refresh()
            verified = envelope_verify(envelope, self._keyset.trusted(), skill=name)
        files_check(verified, skill=name, version=version, files=files, where=f"{name}/", every=every)

    # --- usage ---------------------------------------------------------------------------------

    def report(self, events: Iterable[Mapping]) -> list[str]:
        """Queue usage events (as POST /usage takes them) to be sent in batches from a background
        thread; an event without `event_id` gets one now, so a resent batch never counts twice.
        Returns the ids. Queued events are sent at exit, or now with `flush()`."""
        return self.reporter.report(events)

    def flush(self, timeout: float | None = 10.0) -> bool:
        return self.reporter.flush(timeout)

    def close(self) -> None:
        self.reporter.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the cache -----------------------------------------------------------------------------

    def _get(self, request: tuple, *, parse: Callable[[bytes], Any], check: Check | None = None) -> tuple[Entry, bool]:
        """The entry for `request` (method, path, params, body) and whether it is stale. `check`
        vets each new answer before it is cached (raising refuses it)."""
        key = json.dumps(request, sort_keys=True, separators=(",", ":"))
        entry = self.cache.get(key)
        if entry is not None:
            age = time.time() - entry.checked_at
            if age < self.ttl:
                self.stats.hits += 1
                return self._parsed(entry, parse), entry.unreachable
            if age < self.ttl + self.stale_while_revalidate:
                self._revalidate_in_background(key, request, entry, parse, check)
                self.stats.hits += 1
                return self._parsed(entry, parse), entry.unreachable
        try:
            return self._revalidate(key, request, entry, parse, check), False
        except RegistryUnavailable as error:
            if entry is None:
                raise RegistryUnavailable(f"{error.detail} Nothing is cached for this request yet.") from None
            self.stats.stale += 1
            stale = replace(entry, unreachable=True)
            self.cache.put(stale, persist=False)
            return self._parsed(stale, parse), True

    def _parsed(self, entry: Entry, parse: Callable[[bytes], Any]) -> Entry:
        if entry.parsed is not None:
            return entry
        parsed = replace(entry, parsed=parse(entry.body))
        self.cache.put(parsed, persist=False)
        return parsed

    def _revalidate(
        self, key: str, request: tuple, entry: Entry | None, parse: Callable[[bytes], Any], check: Check | None = None
    ) -> Entry:
        method, path, params, body = request
        headers = {"If-None-Match": entry.etag} if entry is not None and entry.etag else {}
        answer = self.transport.request(method, path, params=params, json_body=body, headers=headers)
        now = time.time()
        if answer.status == 304 and entry is not None:
            self.stats.revalidated += 1
            # Not rewritten on disk: an older checked_at there only costs one more 304 later.
            fresh = entry.confirmed(now)
            self.cache.put(fresh, persist=False)
            return self._parsed(fresh, parse)
        self.stats.fetched += 1
        if check is not None:
            check(answer)
        fresh = Entry(
            key=key,
            etag=answer.headers.get("ETag", ""),
            body=answer.body,
            checked_at=now,
            parsed=parse(answer.body),
        )
        self.cache.put(fresh)
        return fresh

    def _revalidate_in_background(
        self, key: str, request: tuple, entry: Entry, parse: Callable[[bytes], Any], check: Check | None
    ) -> None:
        with self._lock:
            if key in self._revalidating:
                return
            self._revalidating.add(key)
        self.stats.background += 1

        def run() -> None:
            try:
                self._revalidate(key, request, entry, parse, check)
            except RegistryUnavailable:
                self.cache.put(replace(entry, unreachable=True), persist=False)
            except RegistryError:
                # Refused now (the skill is gone, the token revoked): the next call asks again
                # and raises it, rather than serving an answer the registry no longer gives.
                self.cache.forget(key)
            finally:
                with self._lock:
                    self._revalidating.discard(key)

        threading.Thread(target=run, name="skill-registry-revalidate", daemon=True).start()
