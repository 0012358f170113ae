"""Signed releases: the registry's signing keys (public halves; the private key is a file), each
version's attestation, and the public keys publishers sign with."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from registry.models.skills import SkillVersion


class SigningKey(models.Model):
    """A registry key. It signs from `valid_from` until it is rotated out (`valid_until`), and
    verifies what it signed in that window until `expires_at` (never, unless an operator says so:
    a key that may have leaked)."""

    keyid = models.CharField(max_length=64, primary_key=True)  # SHA256:<base64>, the ssh fingerprint
    public_key = models.CharField(max_length=64)  # base64 of the 32 raw bytes
    valid_from = models.DateTimeField()
    valid_until = models.DateTimeField(null=True, blank=True)  # null: the current signing key
    expires_at = models.DateTimeField(null=True, blank=True)
    # The key it replaced, and that key's signature over this one's entry (keys.json's `endorsed_by`).
    endorsed_by = models.CharField(max_length=64, blank=True)
    endorsement = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["valid_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["valid_until"], condition=models.Q(valid_until=None), name="signing_key_one_current"
            )
        ]

    def __str__(self) -> str:
        return self.keyid


class VersionAttestation(models.Model):
    """The DSSE envelope of a version's release statement, re-issued when its scan verdict is
    known; `publisher_envelope` is the publisher's own signed statement, when they signed."""

    version = models.OneToOneField(SkillVersion, on_delete=models.CASCADE, related_name="attestation")
    envelope = models.JSONField()
    channel = models.CharField(max_length=16)  # console, api, cli, import
    publisher_envelope = models.JSONField(null=True, blank=True)
    publisher_key = models.ForeignKey(
        "PublisherKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="signed"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"attestation of {self.version}"


class PublisherKey(models.Model):
    """An Ed25519 public key a user signs releases with (`skillreg push --sign`)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="publisher_keys")
    name = models.CharField(max_length=100)
    keyid = models.CharField(max_length=64)
    public_key = models.CharField(max_length=64)  # base64 of the 32 raw bytes
    format = models.CharField(max_length=16)  # ssh-ed25519, pem, raw: as it was pasted
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["keyid"], condition=models.Q(revoked_at=None), name="publisher_key_unique_active"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.keyid})"
