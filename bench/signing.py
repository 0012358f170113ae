"""What signing costs a publish: the Ed25519 signature alone, the whole attestation step
(`version_attest`: digests, the canonical zip, the statement, the key lookup, the row), and a
publish with it, for a SKILL.md-only skill and one with 20 files of 8 KB.

    .venv/bin/python bench/signing.py [--publishes 200]

Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import describe, prepare_environment, setup_django, timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--publishes", type=int, default=200)
    args = parser.parse_args()
    prepare_environment("signing")
    setup_django()

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from registry.services import attestations
    from registry.services.skills import skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    key = Ed25519PrivateKey.generate()
    payload = b"x" * 1500  # about a statement's size
    print("Ed25519 sign, 1.5 KB payload:", describe(timed(lambda: key.sign(payload), 2000)))

    attest_ms: list[float] = []
    wrapped = attestations.version_attest

    def measured(**kwargs):
        started = time.perf_counter()
        try:
            return wrapped(**kwargs)
        finally:
            attest_ms.append((time.perf_counter() - started) * 1000)

    attestations_module = sys.modules["registry.services.skills"]
    attestations_module.version_attest = measured  # type: ignore[attr-defined]

    for label, files in (
        ("SKILL.md only", []),
        ("20 files of 8 KB", [(f"scripts/s{i}.py", bytes([65 + i % 26]) * 8192, False) for i in range(20)]),
    ):
        attest_ms.clear()
        publish_ms = []
        for number in range(args.publishes):
            skill_md = (
                f"---\nname: bench-signing-{len(files)}\ndescription: Signing benchmark.\n---\n\n# Run {number}\n"
            )
            bundle = bundle_from_parts(skill_md.encode(), files)
            started = time.perf_counter()
            skill_version_publish(bundle=bundle)
            publish_ms.append((time.perf_counter() - started) * 1000)
        print(f"{label}: publish {describe(publish_ms)}")
        print(f"{label}: of which signing (version_attest) {describe(attest_ms)}")


if __name__ == "__main__":
    main()
