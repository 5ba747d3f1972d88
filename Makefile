# Two commands do everything on a fresh machine (Python >= 3.11 and Go >= 1.26 on PATH):
#   make demo   provision the toolchain (built from Go modules, cached), run the quickstart scenario, report
#   make test   lint, type-check, Go plugin tests, and unit + integration + e2e tests on real kwokctl clusters
VENV ?= .venv
BIN := $(VENV)/bin
PYTHON ?= python3

.PHONY: install system-deps tools test demo bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

install: $(BIN)/.installed

# Debian's prometheus (for --prometheus and its e2e test) and chromium (report e2e); skipped when present
DEBS := prometheus chromium chromium-driver
system-deps:
	@missing=""; for b in prometheus chromium chromedriver; do command -v $$b >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $(DEBS)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEBS)) \
	    >/dev/null || { echo "could not install $(DEBS) (need root and apt)"; exit 1; }; \
	fi

tools: install
	$(BIN)/kwokbench tools install

test: tools system-deps
	$(BIN)/ruff check kwokbench tests benchmarks
	$(BIN)/mypy
	cd plugins/gpufilter && GOTOOLCHAIN=local GOFLAGS=-mod=mod go vet ./... && GOTOOLCHAIN=local GOFLAGS=-mod=mod go test ./...
	$(BIN)/pytest

# `run` provisions the core toolchain itself (with progress); scheduler-plugins is built only when needed
demo: install
	$(BIN)/kwokbench run scenarios/quickstart.yaml --out reports
	$(BIN)/kwokbench report reports/quickstart -o reports/quickstart-report

bench: tools
	$(BIN)/python benchmarks/bench_up.py
	$(BIN)/python benchmarks/bench_submit.py
	$(BIN)/python benchmarks/bench_scrape.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
