"""The client reads and writes skills exactly as the registry does: for any bundle, the client's
reading of the registry's zip has the registry's files and fingerprint, and a folder the client
writes is read back by the registry as the same bundle."""

from __future__ import annotations

import posixpath
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skill_registry_client.folders import bundle_from_folder, bundle_from_zip, write_folder

from registry.skillformat.bundle import bundle_from_parts, read_folder, write_zip

SKILL_MD = b"---\nname: prop\ndescription: Property test skill. Use when testing.\n---\nBody\n"

names = st.sampled_from(["a", "b", "docs", "scripts", "x.py", "R\u00e9sum\u00e9.md", ".meta", "run.sh"])
paths = st.lists(names, min_size=1, max_size=3).map("/".join)


@st.composite
def bundles(draw):
    files: dict[str, tuple[bytes, bool]] = {}
    for path in draw(st.lists(paths, max_size=6, unique=True)):
        folders = {path.rsplit("/", i)[0] for i in range(1, path.count("/") + 1)}
        if path == "SKILL.md" or folders & files.keys() or any(p.startswith(path + "/") for p in files):
            continue  # a path cannot be both a file and a folder
        files[path] = (draw(st.binary(max_size=64)), draw(st.booleans()))
    links = []
    taken = set(files)
    for index, target in enumerate(draw(st.lists(st.sampled_from(sorted(files)), max_size=2)) if files else []):
        folder = draw(st.sampled_from(["", *sorted({p.rsplit("/", 1)[0] for p in files if "/" in p})]))
        path = posixpath.join(folder, f"link{index}.md")
        if path in taken:
            continue
        taken.add(path)
        links.append((path, posixpath.relpath(target, folder or ".")))
    parts = [(path, content, executable) for path, (content, executable) in files.items()]
    return bundle_from_parts(SKILL_MD, parts, links=links)


def _files(bundle) -> list[tuple]:
    return sorted((f.path, f.content, f.executable, f.link) for f in bundle.files)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bundles())
def test_the_client_reads_and_writes_skills_as_the_registry_does(bundle):
    pulled = bundle_from_zip("prop", write_zip(bundle, prefix="prop"))
    assert pulled.fingerprint == bundle.fingerprint
    assert _files(pulled) == sorted(
        [("SKILL.md", SKILL_MD, False, None), *((f.path, f.content, f.executable, f.link) for f in bundle.files)]
    )
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory) / "prop"
        write_folder(pulled, folder)
        assert read_folder(folder).fingerprint == bundle.fingerprint
        assert _files(read_folder(folder)) == _files(bundle)
        assert bundle_from_folder(folder).fingerprint == bundle.fingerprint
