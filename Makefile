# adaptstudy: `make book` and `make test` are all a newcomer needs (each sets up .venv first).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# On a CPU-only machine this pins the CPU build where the machine offers it; override for CUDA,
# e.g. `make setup TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0
ADAPTSTUDY_DATA ?= $(abspath ../shared/data)
export ADAPTSTUDY_DATA
PAPERMILL := $(BIN)/papermill --log-level WARNING
STAMP := $(VENV)/.installed
# The extras `make setup` installs: the checks workflow adds `workflows` (actionlint, whose wheel fetches its binary
# from the release page: it installs on a GitHub runner, not on a machine that reaches only package registries).
EXTRAS ?= dev

.PHONY: FORCE setup allocator lint test test-fast test-without-data smoke book publish colab benchmark reproduce reproduce-foundation reproduce-houlsby reproduce-peft reproduce-dsp reproduce-across campaign clean

setup: $(STAMP) allocator

# tcmalloc, which the sweep preloads where the system has it (under glibc's malloc training ran 16-21% slower and its
# memory climbed): installed from the system's packages where that can be done (Debian/Ubuntu, as root or with
# sudo), as CI installs Chromium; elsewhere one line says so and the sweep runs with the system allocator.
allocator:
	@ldconfig -p 2>/dev/null | grep -q libtcmalloc || { \
	  if command -v apt-get > /dev/null && [ "$$(id -u)" = 0 ]; then apt-get install -y -qq libtcmalloc-minimal4 > /dev/null; \
	  elif command -v apt-get > /dev/null && sudo -n true 2> /dev/null; then sudo apt-get install -y -qq libtcmalloc-minimal4 > /dev/null; \
	  fi; } || true
	@ldconfig -p 2>/dev/null | grep -q libtcmalloc || echo "note: tcmalloc is not installed (apt install libtcmalloc-minimal4): training uses the system allocator"

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	$(BIN)/python -m ipykernel install --prefix $(VENV) --name python3 > /dev/null
	touch $(STAMP)

# ruff (format and lint) and import-linter (layers follow the data flow, no import cycles); CI runs it first.
lint: setup
	$(BIN)/ruff format --check src tests benchmarks notebooks scripts
	$(BIN)/ruff check src tests benchmarks notebooks scripts
	$(BIN)/lint-imports

test: setup
	$(BIN)/python -m pytest -q

# The suite without the tests marked slow (those that train a model for more than about 20 s).
test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

# The tests that read no data mirror, for a machine without one (the checks workflow on a runner that has none):
# the book's build and its pages in the browser, the workflows, the code's contracts, the reports on committed records.
NO_DATA_TESTS = allocator base_size_report book chapters committed_grids contracts efficiency evidence \
	pages_in_browser reader_text readme refactor workflows
test-without-data: setup
	$(BIN)/python -m pytest -q $(NO_DATA_TESTS:%=tests/test_%.py)

# Every notebook on smoke parameters (what the end-to-end tests also do): the training notebooks, then every page of
# the book (book/_toc.yml), on the committed results.
smoke: setup
	mkdir -p /tmp/adaptstudy-smoke
	$(PAPERMILL) notebooks/01_data_prep.ipynb /tmp/adaptstudy-smoke/01.ipynb -f params/smoke/data_prep.yaml
	$(PAPERMILL) notebooks/02_dapt.ipynb /tmp/adaptstudy-smoke/02.ipynb -f params/smoke/dapt.yaml -p results_dir /tmp/adaptstudy-smoke/pretrain
	$(PAPERMILL) notebooks/03_tapt.ipynb /tmp/adaptstudy-smoke/03.ipynb -f params/smoke/tapt.yaml -p results_dir /tmp/adaptstudy-smoke/pretrain
	$(PAPERMILL) notebooks/04_finetune.ipynb /tmp/adaptstudy-smoke/04.ipynb -f params/smoke/finetune.yaml -p results_dir /tmp/adaptstudy-smoke/results
	$(PAPERMILL) notebooks/05_sweep.ipynb /tmp/adaptstudy-smoke/05.ipynb -p sweep params/smoke/sweep.yaml -p results_dir /tmp/adaptstudy-smoke/sweep
	for page in $(PAGES); do $(PAPERMILL) notebooks/$$page.ipynb /tmp/adaptstudy-smoke/$$page.ipynb || exit 1; done

# The throughput benchmark (issue: fast training); --quick takes a few minutes.
benchmark: setup
	$(BIN)/python benchmarks/throughput.py

# The Houlsby chapter at CPU scale (resumable: rerun to continue; finished runs are skipped). Stage 1 chooses the
# learning rates (and the adapters' epochs) on seed 0; a choice at an end of its rates extends them a step at a time
# (houlsby_extend.yaml, generated) until it is interior or at its limit; stage 2's grid is generated from its records
# (the committed one holds our choices: delete it to regenerate from yours).
reproduce-houlsby: setup
	$(BIN)/python -m adaptstudy.sweep params/cpu/houlsby_select.yaml --workers 2 --threads 1
	while $(BIN)/python -m adaptstudy.planning.houlsby --extend > /tmp/houlsby_extend.yaml; do \
		mv /tmp/houlsby_extend.yaml params/cpu/houlsby_extend.yaml; \
		$(BIN)/python -m adaptstudy.sweep params/cpu/houlsby_extend.yaml --workers 2 --threads 1 || exit 1; \
	done
	test -f params/cpu/houlsby_report.yaml || { $(BIN)/python -m adaptstudy.planning.houlsby > /tmp/houlsby_report.yaml && mv /tmp/houlsby_report.yaml params/cpu/houlsby_report.yaml; }
	$(BIN)/python -m adaptstudy.sweep params/cpu/houlsby_report.yaml --workers 2 --threads 1

# The IMDb chapter at CPU scale (resumable), as the Houlsby chapter: stage 1 chooses each method's rate on seed 0
# and the selection split; stage 2's grid is generated from its records (delete the committed one to regenerate).
reproduce-peft: setup
	$(BIN)/python -m adaptstudy.sweep params/cpu/peft_imdb_select.yaml --workers 2 --threads 1
	test -f params/cpu/peft_imdb_report.yaml || { $(BIN)/python -m adaptstudy.planning.peft > /tmp/peft_imdb_report.yaml && mv /tmp/peft_imdb_report.yaml params/cpu/peft_imdb_report.yaml; }
	$(BIN)/python -m adaptstudy.sweep params/cpu/peft_imdb_report.yaml --workers 2 --threads 1

# The Don't Stop Pretraining chapter at CPU scale (about 5 hours, resumable): its pretraining runs first, once each,
# as cells of their own that the two workers share.
reproduce-dsp: setup
	$(BIN)/python -m adaptstudy.sweep params/cpu/dsp.yaml --workers 2 --threads 1

# Every chapter's grids in the issues' order, each resumable: one command to start in the background and rerun.
reproduce: reproduce-houlsby reproduce-peft reproduce-dsp reproduce-across

# The across-tasks chapter at CPU scale (resumable): the search that makes Hyperformer train; its stage 1 (the rates
# on seed 0, with the search's recipe) and stage 2 (seeds 1-3), each generated from the records before it (stage 1
# needs the first round's records removed: the planner refuses a mix); then AdapterFusion as the Houlsby chapter:
# stage 1 trains the source adapters and chooses the targets' rates on seed 0 and the selection split, stage 2's grid
# (the sources that learned, seeds 1-3) is generated from it.
reproduce-across: setup
	$(BIN)/python -m adaptstudy.sweep params/cpu/hyperformer_search.yaml --workers 2 --threads 1
	test -f params/cpu/hyperformer_select.yaml || { $(BIN)/python -m adaptstudy.planning.hyperformer select > /tmp/hyperformer_select.yaml && mv /tmp/hyperformer_select.yaml params/cpu/hyperformer_select.yaml; }
	$(BIN)/python -m adaptstudy.sweep params/cpu/hyperformer_select.yaml --workers 2 --threads 1
	test -f params/cpu/hyperformer_report.yaml || { $(BIN)/python -m adaptstudy.planning.hyperformer report > /tmp/hyperformer_report.yaml && mv /tmp/hyperformer_report.yaml params/cpu/hyperformer_report.yaml; }
	$(BIN)/python -m adaptstudy.sweep params/cpu/hyperformer_report.yaml --workers 2 --threads 1
	$(BIN)/python -m adaptstudy.sweep params/cpu/fusion_select.yaml --workers 2 --threads 1
	test -f params/cpu/fusion_report.yaml || { $(BIN)/python -m adaptstudy.planning.fusion > /tmp/fusion_report.yaml && mv /tmp/fusion_report.yaml params/cpu/fusion_report.yaml; }
	$(BIN)/python -m adaptstudy.sweep params/cpu/fusion_report.yaml --workers 2 --threads 1

# The headline campaign at scale, each part resumable, in its order: the later plan for the Houlsby headlines
# (fresh seeds, fp32 on every machine), then the selection on minilm-l3 and mpnet-base (the scale axis and Table 1 at
# base size), then their reported seeds (regenerate houlsby_base_report.yaml as selection cells finish:
# python -m adaptstudy.planning.houlsby_base, and record it with python -m adaptstudy.reporting.amend).
campaign: setup
	$(BIN)/python -m adaptstudy.sweep params/cpu/confirm/power-houlsby/houlsby_power.yaml
	$(BIN)/python -m adaptstudy.sweep params/cpu/houlsby_base_select.yaml
	$(BIN)/python -m adaptstudy.sweep params/cpu/houlsby_base_report.yaml

# The committed foundation runs (about an hour on 2 CPU cores); a finished run is not redone.
FOUNDATION := $(wildcard params/cpu/finetune_*.yaml)
reproduce-foundation: setup
	for p in $(FOUNDATION); do \
	  $(BIN)/python -m adaptstudy.launch.cli done $$p results/foundation || \
	  $(PAPERMILL) notebooks/04_finetune.ipynb /tmp/$$(basename $$p .yaml).ipynb -f $$p -p results_dir results/foundation || exit 1; \
	done

# Execute the analysis notebooks on the committed results and build the HTML report (no training, no network).
# The pages are the book's table of contents (book/_toc.yml), each executed from notebooks/<page>.ipynb, two at a
# time on the 2 cores (BOOK_JOBS=1: one at a time).
PAGES = $(shell sed -n 's|^ *- file: generated/||p' book/_toc.yml)
BOOK_JOBS ?= 2
book: setup
	mkdir -p book/generated
	$(MAKE) --no-print-directory -j$(BOOK_JOBS) $(PAGES:%=book/generated/%.ipynb)
	$(BIN)/jupyter-book build book --quiet -W -n --keep-going
	@echo "report: book/_build/html/index.html"

book/generated/%.ipynb: notebooks/%.ipynb FORCE
	$(PAPERMILL) $< $@

FORCE:

# The built book on the gh-pages branch, pushed to origin, for those who publish by hand (the book workflow deploys
# it on every push to main); -n writes .nojekyll, so that Pages serves the theme's _static/ folder.
publish: book
	$(BIN)/ghp-import -n -p -f book/_build/html

# Every notebook's Colab cell and badge and the README's Colab links, from pyproject.toml's [project.urls] Repository.
colab: setup
	$(BIN)/python -m adaptstudy.launch.colab

clean:
	rm -rf book/_build book/generated
