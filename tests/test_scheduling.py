"""How `make test` splits the suite into units of work and orders them (tests/scheduling.py)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.scheduling import CSP_WALK, KNOWN_SECONDS, order_longest_first, unit_of


def item(nodeid: str, *marks: str):
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: name if name in marks else None)


def config(measured: dict[str, float]):
    return SimpleNamespace(cache=SimpleNamespace(get=lambda key, default: measured))


def test_a_module_is_a_unit_but_each_role_of_the_console_walk_runs_apart():
    assert unit_of("tests/registry/test_labels.py::test_one") == "tests/registry/test_labels.py"
    assert unit_of("tests/registry/test_labels.py::TestClass::test_one") == "tests/registry/test_labels.py"
    assert unit_of(f"{CSP_WALK}[admin]") == f"{CSP_WALK}[admin]"
    csp_module = CSP_WALK.split("::", 1)[0]
    assert unit_of(f"{csp_module}::test_the_walk_covers_every_console_url_pattern") == csp_module
    assert all(unit == unit_of(unit) for unit in KNOWN_SECONDS)  # the figures name units


def test_units_go_out_longest_first_with_each_module_kept_whole_and_in_order():
    items = [
        item("tests/test_fast.py::test_a"),
        item("tests/test_fast.py::test_b"),
        item("tests/test_worker.py::test_a", "integration"),
        item("tests/test_worker.py::test_b", "integration"),
        item("tests/test_measured.py::test_a"),
        item("tests/test_readme.py::test_examples", "integration"),
    ]
    order_longest_first(config({"tests/test_measured.py": 400.0}), items)
    assert [i.nodeid for i in items] == [
        "tests/test_measured.py::test_a",  # the last run's figure
        "tests/test_readme.py::test_examples",  # KNOWN_SECONDS
        "tests/test_worker.py::test_a",  # marked: a worker, a browser or a server
        "tests/test_worker.py::test_b",
        "tests/test_fast.py::test_a",
        "tests/test_fast.py::test_b",
    ]
