# make run   - set up .venv and run the default experiment (GRR on synthetic data, epsilon=1)
# make test  - set up .venv and run the whole test suite
# make test-fast - the suite without the end-to-end tests (marker slow): the inner loop
# make lint  - ruff (lint and format check) and mypy on dp2pub
# make docs  - build the documentation site into site/ (mkdocs build --strict, offline)
# make lock  - refresh requirements.lock (exact versions and hashes) from pyproject.toml's ranges
# make bench - benchmarks against reference libraries (installs the bench extra)
# make ui    - open the MLflow dashboard on the default store
# make server - a team MLflow tracking server on PostgreSQL (cluster in outputs/postgres), 127.0.0.1:5000
# make gallery - run the five studies (2 joblib workers) and copy their figures to docs/figures

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.dp2pub-installed
LOCK   := requirements.lock
STORE  := sqlite:///$(CURDIR)/outputs/mlflow.db

STUDIES := seed_tables fo_variance dp2pub_adult nb_car kanon_adult

.PHONY: run test test-fast lint docs ui server bench gallery venv lock clean

venv: $(STAMP)

# The environment is the lock file's exact versions (hash-checked, no resolution), then
# dp2pub itself, editable and built offline with the locked setuptools.
$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "dp2pub needs Python >= 3.10, found " + sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $@

# Every dependency of dp2pub and its dev extra, resolved for all platforms and Python >= 3.10
# (uv's universal resolution), pinned with the hashes of every file on the index.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet 'uv>=0.5'
	$(BIN)/uv pip compile pyproject.toml --extra dev --universal --python-version 3.10 \
	    --generate-hashes --upgrade --quiet -o $(LOCK)

run: $(STAMP)
	$(BIN)/dp2pub $(ARGS)

# on every core (pytest-xdist); the tests that start PostgreSQL or Ray share one worker; the
# 15 slowest tests are listed at the end
XDIST := -n auto --dist loadgroup --durations=15

test: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check dp2pub hydra_plugins tests experiments examples
	$(BIN)/ruff format --check dp2pub hydra_plugins tests experiments examples
	$(BIN)/mypy

# The site (mkdocs.yml) from docs/: strict, so a broken link or anchor, or a page missing from
# the nav, fails the build; the benchmark pages are rendered from docs/bench/*.json (docs/hooks.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m dp2pub.bench $(ARGS)

gallery: $(STAMP)
	mkdir -p outputs docs/figures
	for study in $(STUDIES); do \
	  CI=1 $(BIN)/dp2pub -m experiment=$$study hydra/launcher=joblib hydra.launcher.n_jobs=2 \
	      tracking.skip_finished=true > outputs/gallery-$$study.log || exit 1; \
	  $(BIN)/dp2pub-figures $$study || exit 1; \
	  cp outputs/figures/$$study.png docs/figures/; \
	done

# STORE=sqlite:///... opens another store, ARGS="--port 5001" passes options to mlflow ui.
# As for make server (dp2pub.services.SERVER_ENV), MLflow 3's job execution stays off unless
# the environment turns it on: it starts seven huey_consumer processes that MLflow does not
# stop on SIGTERM. exec: make's SIGTERM reaches mlflow itself (a shell in between would die
# and leave mlflow and its workers running), and mlflow passes it on to its uvicorn workers.
ui: $(STAMP)
	@echo "Runs: the address dp2pub printed (...#/experiments/<id>/runs?workflowType=machine_learning),"
	@echo "or switch the dashboard's toggle at the top left to Model training."
	exec env MLFLOW_DISABLE_TELEMETRY=$${MLFLOW_DISABLE_TELEMETRY:-true} \
	    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=$${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false} \
	    $(BIN)/mlflow ui --backend-store-uri $(STORE) $(ARGS)

# The local cluster is created on first use and reused; ARGS="--backend-store-uri postgresql://..."
# serves an existing PostgreSQL instead, ARGS="--port 5001" another port.
server: $(STAMP)
	$(BIN)/python -m dp2pub.server $(ARGS)

clean:
	rm -rf $(VENV) outputs .pytest_cache site
