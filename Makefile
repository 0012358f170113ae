# The two commands a person needs: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1

.PHONY: run test install install-dev lint typecheck bench clean lock docs

# The venv keeps the pip that ships with Python: upgrading it from the index would be the one
# download not checked against a hash.
$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# requirements*.txt are compiled by `make lock`: every package pinned, every file hashed, so
# pip refuses anything that is not exactly what was locked.
$(VENV)/.installed: $(VENV)/bin/python requirements.txt
	$(PY) -m pip install --quiet --require-hashes -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.txt
	touch $@

# The client in clients/python is installed as its users install it, not imported from its
# folder, so its tests and tests/clients exercise the installed package and its `skillreg`
# script. --no-deps: it has none, and a local path cannot be hash-checked like requirements*.txt.
CLIENT_SOURCES := clients/python/pyproject.toml $(wildcard clients/python/skill_registry_client/*.py)
$(VENV)/.installed-client: $(VENV)/.installed-dev $(CLIENT_SOURCES)
	$(PY) -m pip install --quiet --no-deps --force-reinstall ./clients/python
	rm -rf clients/python/build clients/python/*.egg-info
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-client

run: install
	$(PY) config/local_state.py
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py skills sync
	$(PY) manage.py ensure_admin --url http://127.0.0.1:$(PORT)/
	$(VENV)/bin/honcho start --procfile Procfile --port $(PORT)

# Test processes run side by side (pytest-xdist), each with its own test database (a copy of one
# migrated template), Celery queue, live server and a Celery worker that its modules share; a
# module's tests stay in one process (they share its fixtures) but for the few long tests that run
# apart, and the units go out longest first (tests/scheduling.py).
# Much of the suite waits on workers, browsers and subprocesses rather than computing, hence one
# process more than the 2 cores CI has. PYTEST_PROCESSES=0 runs it all in one process.
PYTEST_PROCESSES ?= 3
# Every test process, and every Python a test starts (manage.py, Celery, gunicorn), reads its
# compiled modules from one cache instead of compiling the project's again: an environment
# that sets PYTHONDONTWRITEBYTECODE (this CI's does) would otherwise have each of them compile it.
PYCACHE := $(CURDIR)/.cache/pycache

test: install-dev
	env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(PYCACHE) $(VENV)/bin/pytest --numprocesses $(PYTEST_PROCESSES) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy agents registry config clients/python/skill_registry_client

bench: install-dev
	$(PY) bench/run_all.py

# The documentation site (docs/, mkdocs.yml), rebuilt as its pages change.
docs: install-dev
	$(VENV)/bin/mkdocs serve -a 127.0.0.1:8001

# Recompile the lock files from requirements*.in with uv, kept in a venv of its own. Pins already
# in the lock files stay unless an .in file asks otherwise. uv does not read pip's configuration,
# so the same extra indexes and find-links are handed to it: the hashes then cover the files pip
# picks on this machine as well as the index's.
LOCK_VENV := .venv-lock
UV := $(LOCK_VENV)/bin/uv
PIP_CONFIG = $(shell $(PYTHON) -m pip config get global.$(1) 2>/dev/null)
UV_COMPILE = $(UV) pip compile --quiet --generate-hashes --python $(PYTHON) \
	--index-strategy unsafe-best-match --no-emit-index-url --no-emit-find-links \
	--custom-compile-command "make lock" \
	$(addprefix --extra-index-url ,$(call PIP_CONFIG,extra-index-url)) \
	$(addprefix --find-links ,$(call PIP_CONFIG,find-links))

$(UV):
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet uv==0.13.9

lock: $(UV)
	$(UV_COMPILE) requirements.in -o requirements.txt
	$(UV_COMPILE) requirements-dev.in -o requirements-dev.txt

clean:
	rm -rf $(VENV) $(LOCK_VENV) var
