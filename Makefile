# The two commands a person needs: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1

.PHONY: run test install install-dev lint typecheck bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(VENV)/bin/python requirements.txt
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: install
	$(PY) config/local_state.py
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py skills sync
	$(PY) manage.py ensure_admin --url http://127.0.0.1:$(PORT)/
	$(VENV)/bin/honcho start --procfile Procfile --port $(PORT)

test: install-dev
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy agents registry config

bench: install-dev
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) var
