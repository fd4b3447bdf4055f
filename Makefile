# Gluon, from memcpy to GEMM: grade your lessons; for the course's authors, build the website and run the tests.
#
#   make venv              set up the course's Python environment in .venv (once; every target below does it too)
#   make check-02          grade your lessons/02-*/starter.py   (same as: make check LESSON=02)
#   make progress          which lessons' starters pass their machine-code checks (a minute or two the first time)
#   make info              what runs on this machine (versions, GPU, targets; your progress: make progress)
# The course's authors:
#   make book              build the website into _build/html (open _build/html/index.html);
#                          make book REPOSITORY=owner/name: Colab and Binder buttons, a link to the repository
#   make test              the course's tests: tests/ (the book build and browser check included) + notebooks
#                          under nbval
#   make test-plants       only the planted mistakes each lesson's checks must reject (make test runs them too)
#   make test-probes       the research probes' own checks (tools/probes; not in CI)
#   make starters          regenerate every lessons/NN-slug/starter.py from its solution
#   make record            GPU only: measure every lesson (or LESSONS="01 02"), write results/<gpu>.json,
#                          and re-execute the notebooks
#   make clean             remove build outputs (make distclean also removes .venv)
#
# Every target that needs Python creates .venv first (once; see `venv` below).

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gluon-course-installed

# The CPU build of PyTorch for machines without an NVIDIA GPU. If your package index only offers the
# CUDA build under this version, point TORCH_INDEX_URL at PyTorch's CPU-only wheel index (the install
# selector on PyTorch's website gives its address): make venv TORCH_INDEX_URL=...
TORCH_CPU_VERSION ?= 2.13.0
TORCH_INDEX_URL ?=
# pip's own output is kept short (-q); errors still print. PIP_QUIET= shows everything.
PIP_QUIET ?= -q
PIP_INSTALL := $(BIN)/python -m pip install --disable-pip-version-check --progress-bar off --no-compile $(PIP_QUIET)
# Bytecode. Where PYTHONDONTWRITEBYTECODE is set (the 2-core reference machine sets it), no process writes a .pyc, so a venv installed
# with --no-compile has none, and every process that imports torch, Triton, Jupyter and the toolkit compiles their
# sources again: ~4 s of CPU more a process (6.4 s against 2.3 s here for the toolkit's imports), over the ~100
# processes of make test (workers, notebook kernels, checks' children), 1 303 s of CPU instead of 827 on a fresh clone
# (2026-12-05). So the venv compiles its packages once when it is made (compileall on every core, ~25 s on 2; a file
# a package ships for a newer Python, torch's py312_intrinsics.py, does not compile here, is never imported, and is
# why compileall's status is not kept), and each test target compiles the course's own sources first (~1 s).
BYTECODE := $(BIN)/python -m compileall -q -j 0 gluon_course solutions lessons tests tools >/dev/null

# The lesson notebooks that exist (nbval runs them; none yet is not an error, a failing one is); make test hands the
# longest units out first (the website's tests, then the notebooks, the last lessons first), the short tests after.
NOTEBOOKS := $(sort $(wildcard lessons/*/lesson.ipynb))
NOTEBOOKS_LAST_FIRST := $(shell printf '%s\n' $(NOTEBOOKS) | sort -r)
LONGEST_FIRST := tests/test_book.py tests/test_nbval_figures.py $(NOTEBOOKS_LAST_FIRST)
NBVAL_FLAGS := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

# Warnings are errors; --all re-reads every page so a warning in an unchanged page is never hidden.
BOOK_FLAGS := -W -n --keep-going --all
# The course's public GitHub repository, owner/name (unset: the site has no launch buttons). book/_ext/launch_buttons.py
# reads it as GLUON_COURSE_REPOSITORY, which any build may set instead.
REPOSITORY ?= $(GLUON_COURSE_REPOSITORY)

.PHONY: help venv book test test-plants test-probes test-unrecorded test-tests test-notebooks starters check progress record info clean distclean

help:
	@sed -n '3,19p' Makefile | sed 's/^# \{0,1\}//'

# ---------------------------------------------------------------------------------------------------
# The virtual environment
#   * system Python already has a GPU build of torch and triton==3.9.0: the venv sees them
#     (--system-site-packages) and keeps them; only what is missing is installed.
#   * no NVIDIA GPU here: torch==$(TORCH_CPU_VERSION) (CPU build) first, then requirements.txt.
#   * an NVIDIA GPU but no suitable system torch: requirements.txt picks a CUDA torch that pairs with
#     Triton 3.9.0.
# The stamp file is rewritten only when requirements.txt or pyproject.toml change.
venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@set -euo pipefail; \
	if ! command -v $(PYTHON) >/dev/null 2>&1; then \
	  echo "error: '$(PYTHON)' was not found. Install Python 3.10 or newer, or run: make PYTHON=/path/to/python3 ..." >&2; exit 1; \
	fi; \
	if ! $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then \
	  echo "error: $$($(PYTHON) --version 2>&1) is too old; the course needs Python 3.10 or newer (make PYTHON=...)" >&2; exit 1; \
	fi; \
	if ! $(PYTHON) -m venv --help >/dev/null 2>&1; then \
	  echo "error: '$(PYTHON) -m venv' is not available. On Debian/Ubuntu: apt-get install python3-venv" >&2; exit 1; \
	fi; \
	if $(PYTHON) -c 'import torch, triton, sys; sys.exit(not ((torch.version.cuda or torch.version.hip) and triton.__version__ == "3.9.0"))' >/dev/null 2>&1; then \
	  mode=system; \
	elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  mode=gpu; \
	else \
	  mode=cpu; \
	fi; \
	case $$mode in \
	  system) echo "venv: the system Python has a GPU build of torch and Triton 3.9.0; keeping them (--system-site-packages)"; \
	          $(PYTHON) -m venv --system-site-packages $(VENV) ;; \
	  gpu)    echo "venv: NVIDIA GPU found; requirements.txt will install a CUDA build of torch"; \
	          $(PYTHON) -m venv $(VENV) ;; \
	  cpu)    echo "venv: no NVIDIA GPU here; installing the CPU build torch==$(TORCH_CPU_VERSION) first"; \
	          if [ -e /dev/kfd ]; then \
	            echo "venv: note: this machine seems to have an AMD GPU. To measure on it, install a ROCm build of" \
	                 "PyTorch and triton==3.9.0 into the system Python, then: rm -rf $(VENV) && make venv"; \
	          fi; \
	          $(PYTHON) -m venv $(VENV) ;; \
	esac; \
	if [ $$mode = cpu ]; then \
	  echo "venv: pip install torch==$(TORCH_CPU_VERSION) (CPU build)"; \
	  $(PIP_INSTALL) "torch==$(TORCH_CPU_VERSION)" $(if $(TORCH_INDEX_URL),--extra-index-url "$(TORCH_INDEX_URL)") || { \
	    echo "error: could not install torch==$(TORCH_CPU_VERSION). Point pip at an index that has it," \
	         "e.g. make venv TORCH_INDEX_URL=<PyTorch's CPU wheel index>" >&2; exit 1; }; \
	fi; \
	echo "venv: pip install -r requirements.txt (a few minutes the first time)"; \
	$(PIP_INSTALL) -r requirements.txt || { echo "error: installing requirements.txt failed (see pip's message above)" >&2; exit 1; }; \
	echo "venv: pip install -e . (the gluon_course toolkit)"; \
	$(PIP_INSTALL) --no-deps -e . || { echo "error: installing the toolkit (pip install -e .) failed" >&2; exit 1; }; \
	echo "venv: the packages' bytecode (compileall, on every core)"; \
	$(BIN)/python -m compileall -q -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
	  >/dev/null 2>&1 || true; \
	$(BIN)/python -c 'import torch, triton; print(f"venv ready: torch {torch.__version__}, triton {triton.__version__}")'; \
	echo "$$mode" > $(STAMP)

# ---------------------------------------------------------------------------------------------------
# The website (offline; the notebooks are not executed, their committed outputs are shown)
book: venv
	GLUON_COURSE_REPOSITORY="$(REPOSITORY)" $(BIN)/jupyter-book build . $(BOOK_FLAGS)
	@echo "The website is in _build/html: open _build/html/index.html"

# ---------------------------------------------------------------------------------------------------
# Tests: tests/ and the lesson notebooks (nbval) in one pytest run on TEST_JOBS workers (pytest-xdist, --dist
# loadscope): tests go to whichever worker is free, one at a time, except a notebook's cells and the modules whose
# fixtures are built once, which stay together on one worker, in order (tests/conftest.py says which). The workers
# share one compile cache (Triton's, TRITON_CACHE_DIR or ~/.triton/cache, which also keeps the toolkit's
# disassemblies), so a kernel compiled for a test is found by the notebook that shows it, and the other way round.
# Where no GPU is seen, one worker more than the machine has cores: a worker often waits (for a notebook's kernel to
# start, for ptxas, nvdisasm or Chromium, for a child process under a time limit), and the third worker fills those
# waits (on the 2-core reference machine, Triton's cache empty, 2026-12-02: 352 s with 3 workers, 382 s with 2;
# 2026-12-05, a fresh clone with the lessons since: 420 s with 3 workers, over the 6 minutes the course allows). One
# process (-n 0) where nvidia-smi or rocm-smi sees a GPU, so that no notebook is timed beside another test's kernels.
# make test-tests runs tests/ alone, make test-notebooks the notebooks alone. The checks of the research probes in
# tools/probes (marked probe: their kernels are trials, not lessons) are left to make test-probes, and the notebooks
# and plants of NVIDIA lessons not yet recorded on the H200 (marked unrecorded, tests/conftest.py) to make
# test-unrecorded: CI runs make test only. make test-plants runs the planted mistakes alone (marked plant; make test
# runs them too).
HAS_GPU := $(shell { nvidia-smi -L || rocm-smi --showid; } >/dev/null 2>&1 && echo yes)
CORES := $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS ?= $(if $(HAS_GPU),0,$(shell echo $$(( $(CORES) + 1 ))))
test: venv
	@$(BYTECODE)
	@$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadscope -m "not probe and not unrecorded" $(NBVAL_FLAGS) \
	  $(LONGEST_FIRST) tests \
	  $(PYTEST_ARGS) \
	  && echo "make test: all passed" || { echo "make test: FAILED (see above)" >&2; exit 1; }

# PYTEST_ARGS passes options to pytest, e.g. make test PYTEST_ARGS="-x -k book"
test-probes: venv
	@$(BYTECODE)
	@$(BIN)/python -m pytest -n $(TEST_JOBS) -m probe tests $(PYTEST_ARGS) \
	  && echo "make test-probes: all passed" || { echo "make test-probes: FAILED (see above)" >&2; exit 1; }

# The planted mistakes (tests/test_lessons.py's test_plant_is_rejected) of the recorded lessons alone, as make test
# runs them: each a compile or a host-model run of a one-mistake solution that its check must reject (112 s on
# 2 cores, Triton's cache empty, 2026-12-05).
test-plants: venv
	@$(BYTECODE)
	@$(BIN)/python -m pytest -n $(TEST_JOBS) --dist load -m "plant and not unrecorded" tests/test_lessons.py \
	  $(PYTEST_ARGS) \
	  && echo "make test-plants: all passed" || { echo "make test-plants: FAILED (see above)" >&2; exit 1; }

# The notebooks and plants of the lessons not yet recorded on a GPU (tests/conftest.py's `unrecorded` marker):
# about 85 s more within a run on 2 cores (2026-12-05), outside make test's time; run before such a lesson's
# change lands.
test-unrecorded: venv
	@$(BYTECODE)
	@$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadscope -m unrecorded $(NBVAL_FLAGS) $(NOTEBOOKS) tests \
	  $(PYTEST_ARGS) \
	  && echo "make test-unrecorded: all passed" || { echo "make test-unrecorded: FAILED (see above)" >&2; exit 1; }

test-tests: venv
	@$(BYTECODE)
	$(BIN)/python -m pytest tests $(PYTEST_ARGS)

test-notebooks: venv
ifeq ($(strip $(NOTEBOOKS)),)
	@echo "nbval: no lesson notebooks (lessons/*/lesson.ipynb) yet, nothing to run"
else
	@$(BYTECODE)
	$(BIN)/python -m pytest $(NBVAL_FLAGS) $(PYTEST_ARGS) $(NOTEBOOKS)
endif

# ---------------------------------------------------------------------------------------------------
# The command line of the toolkit
starters: venv
	$(BIN)/python -m gluon_course starters

check: venv
	@if [ -z "$(LESSON)" ]; then echo "usage: make check LESSON=02   (or: make check-02)" >&2; exit 2; fi
	$(BIN)/python -m gluon_course check $(LESSON)

check-%: venv
	$(BIN)/python -m gluon_course check $*

progress: venv
	$(BIN)/python -m gluon_course progress

record: venv
	$(BIN)/python -m gluon_course record $(LESSONS)

info: venv
	$(BIN)/python -m gluon_course info

# ---------------------------------------------------------------------------------------------------
clean:
	rm -rf _build .pytest_cache build *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
