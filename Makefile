# Two commands for a fresh machine:  make demo  (install + one prediction)   make test  (install + every test)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test test-fast bench fidelity fidelity-epyc transfer clean

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

# The model's speed: the 1M-record reference, then every shipped example at full length (≈ 2 min).
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_examples.py

# Fit model/profiles/local-2core.yaml to validation/data/local-quiet.jsonl (Java first: it fits the brokers' costs too;
# kafka-python on top) and write the fidelity reports under validation/reports/ (≈ 15 min on 2 cores). The Java
# report sets the error beside a second session's runs of the same configurations (validation/data/local-threads.jsonl).
fidelity: $(STAMP)
	$(BIN)/kafkasim validate validation/data/local-quiet.jsonl --client java \
	    --base-profile validation/profiles/local-2core-start.yaml \
	    --profile model/profiles/local-2core.yaml --max-evaluations 80 \
	    --remeasured validation/data/local-threads.jsonl
	$(BIN)/kafkasim validate validation/data/local-quiet.jsonl --client kafka-python \
	    --base-profile model/profiles/local-2core.yaml \
	    --profile model/profiles/local-2core.yaml --max-evaluations 40

# The same for an AMD EPYC 2-core machine: model/profiles/local-2core-epyc.yaml fitted to validation/data/local-epyc.jsonl
# (the reference matrix measured there) from the costs measured there (validation/profiles/local-2core-epyc-start.yaml),
# and validation/reports/local-epyc-*.md (≈ 6 min).
fidelity-epyc: $(STAMP)
	$(BIN)/kafkasim validate validation/data/local-epyc.jsonl --client java \
	    --base-profile validation/profiles/local-2core-epyc-start.yaml \
	    --profile model/profiles/local-2core-epyc.yaml --max-evaluations 80
	$(BIN)/kafkasim validate validation/data/local-epyc.jsonl --client kafka-python \
	    --base-profile model/profiles/local-2core-epyc.yaml \
	    --profile model/profiles/local-2core-epyc.yaml --max-evaluations 40

# The transfer protocol (docs/fidelity.md): measure this host's costs, measure the transfer matrix, check the
# measured profile on it unfitted (≈ 12 min on 2 cores; a quiet machine). DATE names the files.
DATE ?= $(shell date +%Y-%m-%d)
transfer: $(STAMP)
	$(BIN)/kafkasim calibrate host -o validation/profiles/host-$(DATE).yaml
	nice -n -10 $(BIN)/kafkasim measure --matrix validation/matrices/transfer.yaml \
	    --out validation/data/transfer-$(DATE).jsonl
	$(BIN)/kafkasim validate validation/data/transfer-$(DATE).jsonl --matrix validation/matrices/transfer.yaml \
	    --no-fit --base-profile validation/profiles/host-$(DATE).yaml --out-dir validation/reports/transfer-$(DATE)

clean:
	rm -rf $(VENV) build *.egg-info
