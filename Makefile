# Two commands for a fresh machine:  make demo  (install + one prediction)   make test  (install + every test)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test test-fast bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/kafkasim predict examples/kontur-2020/I.yaml

# Every test, including the live ones that start a real Kafka broker (downloaded once into ~/.cache/kafkasim)
# and the browser test (Debian's chromium and chromedriver, installed here if missing: needs root or sudo).
test: $(STAMP)
	bash scripts/install-browser.sh
	$(BIN)/python -m pytest -q -rs

# Everything but the live tests.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not live'

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_simulate.py

clean:
	rm -rf $(VENV) build *.egg-info
