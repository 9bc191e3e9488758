# Quick start (Debian, as root): `make demo` and `make test` set up everything they need.
VENV ?= .venv
PY := $(VENV)/bin/python
# Every step that reaches a registry (apt, pip, the Go module proxy) goes through tools/retry.sh: a transient
# network failure is tried again with back-off, any other failure stops at once.
RETRY := tools/retry.sh
FABRIC := $(VENV)/bin/fabric
APT_PACKAGES := frr frr-pythontools openssh-server openssh-client lldpd iperf3 iproute2 iputils-ping fping strace ethtool procps python3-venv \
  libyang2-dev prometheus systemd netplan.io graphviz
# Headless chromium: the HTML reports (cabling, accept) loaded in a real browser by the tests (tests/support/browser.py)
APT_PACKAGES += chromium
# The lab's real-kernel checks (tests/lab/test_vm.py, fabric/lab/vm.py): QEMU, busybox for virtme-ng's guest, the
# Debian 6.12 kernel (bookworm-security; sch_ets, sch_red, rdma_rxe), perftest and the RDMA tools
APT_PACKAGES += qemu-system-x86 busybox-static linux-image-6.12-amd64 perftest rdma-core ibverbs-utils
# Real Kubernetes nodes in the namespace lab (fabric/lab/nodes.py): the container runtime and the CNI plugins
APT_PACKAGES += containerd runc containernetworking-plugins
# Side venv for ../shared/tools/sonic_yang_check.py (libyang C 2 from Debian, its PyPI bindings)
YANG_VENV := .refs/yang-venv

.PHONY: demo test docs lint bench fuzz deps venv refs refs-yang refs-avd clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(RETRY) $(PY) -m pip install -q --upgrade pip
	$(RETRY) $(PY) -m pip install -q -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

# Independent references for the tests, each in a side venv the project venv never imports from.
$(YANG_VENV)/.installed:
	python3 -m venv $(YANG_VENV)
	$(RETRY) $(YANG_VENV)/bin/pip install -q cffi 'libyang==2.7.1'
	touch $@

# The SONiC YANG checker's side venv (tests/nos/sonic/test_yang.py); needs libyang2-dev (`make deps`).
refs-yang: deps $(YANG_VENV)/.installed

# pyavd (Arista AVD) renders the same intent as tests/nos/eos/test_render.py compares with ours; the version is the one
# bench/pyavd_compare.py measures, and the test checks it.
PYAVD_VERSION := 6.4.0
AVD_VENV := .refs/avd-venv

$(AVD_VENV)/.installed-pyavd-$(PYAVD_VERSION):
	rm -rf $(AVD_VENV)
	python3 -m venv $(AVD_VENV)
	$(RETRY) $(AVD_VENV)/bin/python -m pip install -q --disable-pip-version-check pyavd==$(PYAVD_VERSION)
	touch $@

refs-avd: $(AVD_VENV)/.installed-pyavd-$(PYAVD_VERSION)

refs: refs-yang refs-avd

# The packages' own services stay off: the tests need their binaries only; lldpd runs in the lab's namespaces alone
# (nothing speaks LLDP on the machine's own interfaces).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install:$$missing" >&2; exit 2; fi; \
	  $(RETRY) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(RETRY) apt-get install -y -qq $$missing; \
	  for s in prometheus prometheus-node-exporter lldpd; do \
	    if [ -d /run/systemd/system ]; then systemctl disable --now $$s >/dev/null 2>&1 || true; \
	    elif [ -x /etc/init.d/$$s ]; then /etc/init.d/$$s stop >/dev/null 2>&1; update-rc.d $$s disable >/dev/null 2>&1 || true; fi; \
	  done; \
	fi

DEMO_INV ?= inventories/example

# The whole lifecycle on the lab: lab up → drift one leaf by hand → plan (shows it) → apply → plan (empty)
# → status → hosts apply (fleet over SSH) → accept (iperf3 stands in for perftest) → report; lab down always runs.
demo: deps venv
	$(FABRIC) validate $(DEMO_INV)
	$(FABRIC) plan --offline $(DEMO_INV)
	$(FABRIC) render $(DEMO_INV) -o build/demo
	$(FABRIC) lint $(DEMO_INV)
	$(FABRIC) lab up $(DEMO_INV)
	@rc=0; \
	{ echo "--- drift: timers bgp 5 15 on leaf-su1-r1 by hand"; \
	  $(FABRIC) lab exec $(DEMO_INV) leaf-su1-r1 -- vtysh -c 'configure terminal' \
	    -c 'router bgp 65101' -c 'timers bgp 5 15' && \
	  $(FABRIC) plan $(DEMO_INV) --lab && \
	  $(FABRIC) apply $(DEMO_INV) --lab --yes --settle 2 --postcheck-timeout 20 && \
	  $(FABRIC) plan $(DEMO_INV) --lab && \
	  $(FABRIC) lab status $(DEMO_INV) && \
	  $(FABRIC) hosts apply $(DEMO_INV) --lab && \
	  $(FABRIC) accept $(DEMO_INV) --lab --quick -o build/demo/accept; } || rc=$$?; \
	$(FABRIC) lab down $(DEMO_INV); exit $$rc

# pytest-xdist: TEST_WORKERS processes; the nine serial groups of tests/conftest.py (FIRST: the labs, four of root
# tests, k8s, the real nodes, the VM) each start at once on a worker of their own, and the CPU-bound tests go to
# the workers as their groups end. Nine on two cores: the group workers mostly wait on timers, daemons and SSH (and
# run at a higher priority).
TEST_WORKERS ?= 9
# Bytecode is written even where the environment says PYTHONDONTWRITEBYTECODE: without it every worker rewrites the
# asserts of all 90 test modules (about 5 CPU-s each) and every `fabric` process the tests start compiles the
# package again; one collection first writes it once, before the workers read it.
TEST_ENV = env -u PYTHONDONTWRITEBYTECODE
test: deps venv refs
	@$(MAKE) -s k8s-bins || echo "make test: no Kubernetes binaries: the cluster tests skip (fail with CI=true)" >&2
	@$(MAKE) -s k8s-nodes || echo "make test: no kubelet, multus or whereabouts: the real-node tests skip" >&2
	$(VENV)/bin/ruff check fabric tests bench tools
	@$(MAKE) -s docs
	$(VENV)/bin/lint-imports
	$(TEST_ENV) $(VENV)/bin/pytest -q --collect-only -p no:cacheprovider >/dev/null
	$(TEST_ENV) $(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The fuzzer (tests/fuzz), long: FUZZ_EXAMPLES cases of every family (inventories, configs, outputs, intents, running,
# replies, remediate; FUZZ_FAMILIES picks some), in chunks of FUZZ_CHUNK cases, each a fresh process (tests/fuzz/long.py;
# FUZZ_JOBS of them at once)
# at nice 19; totals in build/fuzz/<family>.json, inputs of defects kept in build/fuzz/chunks/*/defects/. `make test`
# runs the same tests with the defaults of tests/fuzz/test_fuzz.py (the same fixed seed, 100 inventory mutations).
FUZZ_EXAMPLES ?= 10000
FUZZ_CHUNK ?= 1000
FUZZ_SEED ?= 17
FUZZ_JOBS ?= 1
fuzz: venv
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_CHUNK=$(FUZZ_CHUNK) FUZZ_SEED=$(FUZZ_SEED) FUZZ_JOBS=$(FUZZ_JOBS) nice -n 19 $(PY) -m tests.fuzz.long

# The Kubernetes control plane of the K8s tests and `fabric lab up --k8s`, built from the Go modules pinned in
# tools/k8s-bins/*/go.mod into ~/.cache/roce-fabric/k8s-bins/<versions-key>/ (reused when present), and Volcano
# v1.15.1 (HyperNode tiers) from its source in ../shared/volcano-src into a keyed directory of its own beside it.
k8s-bins:
	@$(RETRY) tools/k8s-bins/build.sh >/dev/null
	@$(RETRY) tools/k8s-bins/volcano-src.sh >/dev/null

# What the lab's real nodes run besides Debian's packages (`fabric lab up --k8s --real-nodes N`): the kubelet,
# multus and whereabouts, from tools/k8s-nodes/*/go.mod into ~/.cache/roce-fabric/k8s-nodes/<versions-key>/.
k8s-nodes:
	@$(RETRY) tools/k8s-nodes/build.sh >/dev/null

# The reference site (docs/, mkdocs.yml) into build/site, strict: a broken link or anchor, or a page left out of the
# nav, fails; the pages made from the code (docs/reference/) must be current (tools/docs_reference.py).
docs: venv
	$(PY) tools/docs_reference.py --check
	$(VENV)/bin/mkdocs build --strict --quiet

bench: venv
	$(PY) bench/render_scale.py

clean:
	rm -rf build $(VENV) .refs
