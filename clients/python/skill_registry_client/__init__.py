"""Python client for Skill Registry: `Client` for agents, `skillreg` for skill folders."""

from skill_registry_client.attestation import SignatureRefused
from skill_registry_client.client import CacheStats, Client, Resolution
from skill_registry_client.errors import (
    ContentMismatch,
    NotFound,
    RegistryError,
    RegistryUnavailable,
    VersionConflict,
)
from skill_registry_client.folders import SkillBundle, SkillFile

__version__ = "0.1.0"
__all__ = [
    "CacheStats",
    "Client",
    "ContentMismatch",
    "NotFound",
    "RegistryError",
    "RegistryUnavailable",
    "Resolution",
    "SignatureRefused",
    "SkillBundle",
    "SkillFile",
    "VersionConflict",
]
