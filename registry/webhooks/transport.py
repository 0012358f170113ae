"""One webhook attempt: resolve the receiver's host, refuse addresses that are not public, and
POST the signed body to the address that was checked.

Connecting to the checked address (not to the host name again) is what makes the check hold: a
name whose DNS answer changes between the check and the connection (a rebinding attack) cannot
steer the request to an internal address. TLS still verifies the certificate against the name.
Redirects are never followed: a 3xx is an answer like any other non-2xx.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

SIGNATURE_HEADER = "X-Skill-Registry-Signature"
# A Standard Webhooks secret (https://www.standardwebhooks.com): `whsec_` and the key in base64.
STANDARD_SECRET_PREFIX = "whsec_"
# How much of a receiver's answer is kept on the delivery, for whoever reads why it failed.
ANSWER_MAX_CHARS = 2000


class UnusableUrl(Exception):
    """The URL cannot receive webhooks: not http(s), no host, a host that does not resolve, or an
    address that is not public (while private addresses are not allowed)."""


class UnresolvableHost(UnusableUrl):
    """The host has no address now; unlike a refused address, it may have one later."""


@dataclass(frozen=True)
class Target:
    """Where one attempt goes: the URL's parts and the checked addresses of its host."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port == default else f"{shown}:{self.port}"


@dataclass(frozen=True)
class Answer:
    """What an attempt got: the receiver's status and the start of its body, or why there was none."""

    status: int | None
    body: str = ""
    error: str = ""

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def transient(self) -> bool:
        """Worth another attempt: no answer (refused, reset, timed out), a server error, or a
        receiver asking to be called later. Other answers (a 404, a redirect) will not change."""
        return self.status is None or self.status >= 500 or self.status in (408, 425, 429)


def signature(*, secret: str, body: bytes) -> str:
    """The signature header's value: `sha256=` and the hex HMAC-SHA256 of the raw body, keyed
    with the secret's UTF-8 bytes (whatever the secret looks like)."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def standard_key(secret: str) -> bytes | None:
    """The key a `whsec_` secret carries in base64, or None when the secret is not one."""
    if not secret.startswith(STANDARD_SECRET_PREFIX):
        return None
    try:
        return base64.b64decode(secret.removeprefix(STANDARD_SECRET_PREFIX), validate=True)
    except binascii.Error:
        return None


def standard_signature(*, secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks `webhook-signature` value: `v1,` and the base64 HMAC-SHA256 of
    `id.timestamp.body`. The key is what a `whsec_` secret encodes (so the Standard Webhooks
    libraries verify it as given), any other secret's own UTF-8 bytes."""
    key = standard_key(secret) or secret.encode("utf-8")
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def signature_headers(*, secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Both signatures of one attempt: ours over the body, and Standard Webhooks' over the id,
    the attempt's time and the body (a receiver refuses an old timestamp and a seen id)."""
    return {
        SIGNATURE_HEADER: signature(secret=secret, body=body),
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret=secret, message_id=message_id, timestamp=timestamp, body=body),
    }


# NAT64's well-known prefix (RFC 6052): the last 32 bits are the IPv4 address a gateway reaches.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address is routed by, each with how it carries it: a packet to
    2002:7f00:1:: (6to4) or to a Teredo address goes to the IPv4 address inside it, so that
    address is what must be public."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    if ip.ipv4_mapped is not None:
        return [("an IPv4-mapped address", ip.ipv4_mapped)]
    if ip.sixtofour is not None:
        return [("a 6to4 address", ip.sixtofour)]
    if ip.teredo is not None:
        server, client = ip.teredo
        return [("a Teredo address (server)", server), ("a Teredo address (client)", client)]
    if ip in _NAT64:
        return [("a NAT64 address", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))]
    return []


def _category(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Which kind of address that is not public `ip` is (`loopback`, `private`, ...), or None."""
    for flag, what in (
        ("is_unspecified", "unspecified"),
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_private", "private"),
        ("is_multicast", "multicast"),
        ("is_reserved", "reserved"),
    ):
        if getattr(ip, flag):
            return what
    if not ip.is_global:
        return "not public"
    return None


def address_problem(address: str) -> str | None:
    """Why a receiver may not have this address ("a loopback address", "a 6to4 address for
    127.0.0.1, which is loopback"), or None for a public one. An IPv6 address that embeds an
    IPv4 address (IPv4-mapped, 6to4, Teredo, NAT64) is judged by what it embeds, as the plain
    IPv4 address would be."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)
    embedded = _embedded_ipv4(ip)
    for how, ipv4 in embedded:
        what = _category(ipv4)
        if what is not None:
            return f"{how} for {ipv4}, which is {what}"
    if embedded:
        return None
    what = _category(ip)
    return None if what is None else f"an address that is {what}"


def target_parse(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an http(s) URL, or UnusableUrl."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise UnusableUrl(f"The URL cannot be read: {error}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnusableUrl("The URL must start with http:// or https://.")
    if not parts.hostname:
        raise UnusableUrl("The URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise UnusableUrl("The URL must not carry a user name or password; sign with the secret instead.")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80), path


def target_check(url: str, *, allow_private: bool) -> Target:
    """Resolve the URL's host now and check every address it has: one that is not public refuses
    the URL (a name with one public and one internal address could reach either)."""
    scheme, host, port, path = target_parse(url)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise UnresolvableHost(f"The host {host!r} does not resolve: {error}.") from None
    addresses = tuple(dict.fromkeys(str(entry[4][0]) for entry in found))
    if not addresses:
        raise UnresolvableHost(f"The host {host!r} has no address.")
    if not allow_private:
        for address in addresses:
            problem = address_problem(address)
            if problem is not None:
                raise UnusableUrl(
                    f"The host {host!r} resolves to {address}, {problem}; webhooks go to public "
                    "addresses only (WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true allows others)."
                )
    return Target(scheme=scheme, host=host, port=port, path=path, addresses=addresses)


class _CheckedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed address, with SNI and certificate checks for the URL's host name."""

    def __init__(self, address: str, port: int, *, server_hostname: str, timeout: float) -> None:
        super().__init__(address, port, timeout=timeout, context=ssl.create_default_context())
        self._server_hostname = server_hostname

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_hostname)  # type: ignore[attr-defined]


def post(target: Target, *, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST `body` to the first checked address of `target`. Never raises for the network's sake:
    a failure is an Answer without a status."""
    address = target.addresses[0]
    connection: http.client.HTTPConnection
    if target.scheme == "https":
        connection = _CheckedHTTPSConnection(address, target.port, server_hostname=target.host, timeout=timeout)
    else:
        connection = http.client.HTTPConnection(address, target.port, timeout=timeout)
    try:
        connection.request(
            "POST",
            target.path,
            body=body,
            headers={"Host": target.host_header, "Content-Type": "application/json", **headers},
        )
        response = connection.getresponse()
        answer = response.read(ANSWER_MAX_CHARS * 4).decode("utf-8", "replace")[:ANSWER_MAX_CHARS]
        return Answer(status=response.status, body=answer)
    except (OSError, http.client.HTTPException) as error:  # refused, reset, timeout, TLS, bad answer
        return Answer(status=None, error=f"{type(error).__name__}: {error}"[:ANSWER_MAX_CHARS] or "no answer")
    finally:
        connection.close()
