# Two commands do everything on a fresh machine (Python >= 3.11 and Go >= 1.26 on PATH):
#   make demo   provision the toolchain (built from Go modules, cached), run the quickstart scenario, report
#   make test   lint, type-check, Go plugin tests, and unit + integration + e2e tests on real kwokctl clusters
VENV ?= .venv
# schedulers built from pinned source archives (YuniKorn) find them here: the sources shipped beside the repo
export KWOKBENCH_SOURCES ?= $(abspath ../shared/sources)
BIN := $(VENV)/bin
PYTHON ?= python3

.PHONY: install system-deps tools lint-workflows prebuild test demo bench clean docs docs-ref docs-check

# signal-processing-algorithms (E-divisive means, `kwokbench detect`) without its declared dependencies: it pins
# numpy<2, which would take numpy 1.26 under a pyarrow that needs numpy 2; what its detector imports is in pyproject
SIGNAL_PROCESSING := signal-processing-algorithms==2.1.6
# The dependencies are installed by uv (PyPI, pinned): a fresh clone's virtualenv took 108 s with pip, which fetches
# one wheel at a time, and 33-39 s with uv (2026-12-01, this project's 2-core machine). Bytecode is compiled, as pip
# does. pip is the fallback.
UV_VERSION := 0.13.9
UV_PIP := $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check 'uv==$(UV_VERSION)' && $(UV_PIP) -e '.[test]' \
	  || $(BIN)/pip install -q --disable-pip-version-check -e '.[test]'
	$(UV_PIP) --no-deps '$(SIGNAL_PROCESSING)' || $(BIN)/pip install -q --disable-pip-version-check --no-deps '$(SIGNAL_PROCESSING)'
	touch $@

install: $(BIN)/.installed

# Debian's prometheus (for --prometheus and its e2e test), chromium (report e2e) and postgresql (the shared store's
# tests start their own server from its binaries, in /usr/lib/postgresql/<ver>/bin, off PATH), each skipped when
# present. GitHub's Ubuntu runners already have Google Chrome and its chromedriver ($CHROMEWEBDRIVER); Ubuntu's
# chromium is a snap stub. `dpkg --configure -a` first: an install killed half-way (a machine handed on mid-install)
# leaves dpkg refusing every later install until it is run (a CI failure). dpkg needs ldconfig and start-stop-daemon,
# in /usr/sbin and /sbin: added to a PATH without them (root's under a bare `env -i`, a fresh machine of 2026-11-29).
BROWSERS := chromium google-chrome google-chrome-stable
system-deps:
	@debs=""; command -v prometheus >/dev/null || debs=" prometheus"; \
	{ ls /usr/lib/postgresql/*/bin/initdb || command -v initdb; } >/dev/null 2>&1 || debs="$$debs postgresql"; \
	browser=""; for b in $(BROWSERS); do command -v $$b >/dev/null && browser=1; done; \
	driver=""; { command -v chromedriver || ls "$${CHROMEWEBDRIVER:-/nonexistent}/chromedriver"; } >/dev/null 2>&1 && driver=1; \
	[ -n "$$browser" ] && [ -n "$$driver" ] || debs="$$debs chromium chromium-driver"; \
	if [ -n "$$debs" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo -n"; PATH="$$PATH:/usr/local/sbin:/usr/sbin:/sbin"; export PATH; \
	  echo "installing Debian packages:$$debs"; \
	  ($$sudo env DEBIAN_FRONTEND=noninteractive dpkg --configure -a && $$sudo apt-get update -qq \
	    && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$debs) >/dev/null \
	    || { echo "could not install$$debs (need root or sudo, and apt)"; exit 1; }; \
	fi

tools: install
	$(BIN)/kwokbench tools install

# actionlint (Go, installed once into kwokbench's cache, never into git) and zizmor (PyPI, in the venv) on the workflows
# and the composite action; zizmor runs offline, and any finding of either fails
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := $(or $(KWOKBENCH_CACHE),$(HOME)/.cache/kwokbench)/tools/actionlint
lint-workflows: install
	@[ "$$($(ACTIONLINT) -version 2>/dev/null | head -n1)" = "$(ACTIONLINT_VERSION)" ] || { \
	  echo "installing actionlint $(ACTIONLINT_VERSION) into $(dir $(ACTIONLINT))"; \
	  GOBIN=$(dir $(ACTIONLINT)) GOTOOLCHAIN=local go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION); }
	$(ACTIONLINT)
	$(BIN)/zizmor --offline --no-progress .github/workflows action.yml

# The builds the e2e files need beyond the core toolchain (the next Kubernetes release, scheduler_perf, the batch
# schedulers), begun first, in the background at the lowest CPU priority, beside the toolchain, the linters and the
# tests: cold, they are the suite's longest path (tests/support/prebuild.py). Stopped when make ends; pytest takes them over.
# $$PPID is make's pid; KWOKBENCH_PREBUILD=0 turns them off.
prebuild: install
	@$(BIN)/python -m tests.support.prebuild --for-make $$PPID

# Two pytest-xdist workers, each taking whole files (a file's clusters and builds are module fixtures, and its
# tests stay in order): the e2e tier waits on clusters more than it computes (the serial suite kept 0.6 of this
# machine's 2 cores busy), so two files at a time halve the wall time. TEST_WORKERS=0 runs it in one process.
# --no-loadscope-reorder: the files run in tests/conftest.py's order (those that need a build last, in the order
# tests/support/prebuild.py builds them in the background from the start: cold, the builds overlap the other tests).
TEST_WORKERS ?= 2
# the Go plugins' vet and tests compile the Kubernetes packages as `make tools` built them (kwokbench's own Go
# environment, kwokbench/toolchain/install.py, and -trimpath): cold, they reuse that build (611 of the framework's
# 613 packages) instead of compiling them again
PLUGIN_GO := GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS='-mod=mod -trimpath -gcflags=all=-dwarf=false'
# The suite starts about a thousand Python processes. Under PYTHONDONTWRITEBYTECODE (this project's machines set it)
# each compiled kwokbench's modules anew, about 0.3 CPU-seconds a run; compileall writes them once (0.5 s) first.
test: prebuild lint-workflows tools system-deps
	$(BIN)/ruff check kwokbench tests benchmarks docs
	$(BIN)/mypy
	$(BIN)/mypy benchmarks
	$(BIN)/mypy --strict docs/figures.py
	cd plugins/gpufilter && $(PLUGIN_GO) go vet ./... && $(PLUGIN_GO) go test ./...
	cd plugins/costscore && $(PLUGIN_GO) go vet ./... && $(PLUGIN_GO) go test ./...
	cd plugins/wasm/guest && GOTOOLCHAIN=local go vet ./... && GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local go vet ./... && GOTOOLCHAIN=local go test ./...
	cd plugins/gpufilter-wasm && GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local go vet ./...
	cd plugins/nodenumber && $(PLUGIN_GO) go vet ./... && $(PLUGIN_GO) go test ./...
	cd plugins/gpushare && $(PLUGIN_GO) go vet ./... && $(PLUGIN_GO) go test ./...
	cd plugins/nodenumber-wasm && GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local go vet ./...
	cd plugins/wasm && $(PLUGIN_GO) go vet ./... && $(PLUGIN_GO) go test ./...
	$(BIN)/python -m compileall -q kwokbench tests
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10 --times=.pytest_cache/kwokbench-times.json

# `run` provisions the core toolchain itself (with progress); scheduler-plugins is built only when needed
demo: install
	$(BIN)/kwokbench run scenarios/quickstart.yaml --out reports
	$(BIN)/kwokbench report reports/quickstart -o reports/quickstart-report

# The manual (mkdocs.yml, docs/). `make docs` serves it at http://127.0.0.1:8000 while you edit; `make docs-ref` rewrites
# its generated reference pages (commands, scenario fields, error messages) from the code; `make docs-check` builds it
# strictly and checks those pages. `make test` runs the same checks in pytest (tests/unit/test_docs.py), plus every
# ```console example of the manual. NO_MKDOCS_2_WARNING quiets mkdocs-material's end-of-life banner.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-ref: install
	$(BIN)/python -m kwokbench.cli.docs_gen

docs-check: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python -m kwokbench.cli.docs_gen --check

bench: tools
	$(BIN)/python benchmarks/bench_up.py
	$(BIN)/python benchmarks/bench_submit.py
	$(BIN)/python benchmarks/bench_scrape.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
