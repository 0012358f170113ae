"""The .pth check (config/check_pth.py) passes this venv and fails on what it must catch.

The failing cases plant files in a fake site-packages under tmp_path, never in the real venv.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from config.check_pth import _digest, pth_problems

ROOT = Path(__file__).resolve().parent.parent.parent
DISTUTILS_PTH = "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'; "


def run_check(*site_dirs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "config.check_pth", *map(str, site_dirs)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    """A site-packages as a fresh venv leaves it: setuptools with its distutils-precedence.pth."""
    pth = tmp_path / "distutils-precedence.pth"
    pth.write_text(DISTUTILS_PTH)
    dist_info = tmp_path / "setuptools-65.5.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: setuptools\nVersion: 65.5.0\n")
    (dist_info / "RECORD").write_text(
        f"distutils-precedence.pth,sha256={_digest(pth, 'sha256')},{pth.stat().st_size}\n"
        "setuptools-65.5.0.dist-info/METADATA,,\nsetuptools-65.5.0.dist-info/RECORD,,\n"
    )
    return tmp_path


def test_the_venv_running_the_tests_has_only_allowed_pth_files():
    result = run_check()

    assert result.returncode == 0, result.stderr
    assert "only the allowed ones" in result.stdout


def test_it_passes_a_site_packages_with_only_the_allowed_file(site_dir):
    assert pth_problems(site_dir) == []
    assert run_check(site_dir).returncode == 0


def test_it_fails_on_an_unexpected_pth_file(site_dir):
    (site_dir / "litellm_init.pth").write_text("import base64, subprocess\n")

    result = run_check(site_dir)

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{site_dir / 'litellm_init.pth'}: unexpected .pth file (not in ALLOWED_PTH in config/check_pth.py)"
    ]


def test_it_fails_when_an_allowed_pth_file_was_edited(site_dir):
    (site_dir / "distutils-precedence.pth").write_text(DISTUTILS_PTH + "import urllib.request\n")

    problems = pth_problems(site_dir)

    assert problems == [
        f"{site_dir / 'distutils-precedence.pth'}: differs from the file setuptools installed (hash in its RECORD)"
    ]


def test_it_fails_on_an_allowed_name_that_its_distribution_did_not_install(site_dir):
    # The right name dropped by something else: no setuptools RECORD vouches for it.
    shutil.rmtree(site_dir / "setuptools-65.5.0.dist-info")

    problems = pth_problems(site_dir)

    assert problems == [
        f"{site_dir / 'distutils-precedence.pth'}: allowed only as installed by setuptools, "
        "whose RECORD does not list it"
    ]
