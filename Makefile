# make run   - set up .venv and run the default experiment (GRR on synthetic data, epsilon=1)
# make test  - set up .venv with the dev extras and run the whole test suite
# make bench - benchmarks against reference libraries (installs the bench extra)
# make ui    - open the MLflow dashboard on the default store
# make gallery - run the five studies (2 joblib workers) and copy their figures to docs/figures

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.dp2pub-installed
STORE  := sqlite:///$(CURDIR)/outputs/mlflow.db

STUDIES := seed_tables fo_variance dp2pub_adult nb_car kanon_adult

.PHONY: run test ui bench gallery venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "dp2pub needs Python >= 3.10, found " + sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

run: $(STAMP)
	$(BIN)/dp2pub $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

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

ui: $(STAMP)
	$(BIN)/mlflow ui --backend-store-uri $(STORE)

clean:
	rm -rf $(VENV) outputs .pytest_cache
