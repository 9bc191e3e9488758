# Quick start (Debian, as root): `make demo` and `make test` set up everything they need.
VENV ?= .venv
PY := $(VENV)/bin/python
FABRIC := $(VENV)/bin/fabric
APT_PACKAGES := frr frr-pythontools openssh-server openssh-client iperf3 iproute2 iputils-ping ethtool procps

.PHONY: demo test lint bench deps venv clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install:$$missing" >&2; exit 2; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
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
	@name=$$($(FABRIC) validate $(DEMO_INV) | cut -d: -f1); rc=0; \
	sock="$${FABRIC_LAB_STATE:-/run/roce-fabric/lab}/$$name/frr/leaf-su1-r1"; \
	{ echo "--- drift: timers bgp 5 15 on leaf-su1-r1 by hand"; \
	  $(FABRIC) lab exec $(DEMO_INV) leaf-su1-r1 -- vtysh --vty_socket "$$sock" -c 'configure terminal' \
	    -c 'router bgp 65101' -c 'timers bgp 5 15' && \
	  $(FABRIC) plan $(DEMO_INV) && \
	  $(FABRIC) apply $(DEMO_INV) --yes --settle 2 --postcheck-timeout 20 && \
	  $(FABRIC) plan $(DEMO_INV) && \
	  $(FABRIC) lab status $(DEMO_INV) && \
	  $(FABRIC) hosts apply $(DEMO_INV) --lab && \
	  $(FABRIC) accept $(DEMO_INV) --lab --quick -o build/demo/accept; } || rc=$$?; \
	$(FABRIC) lab down $(DEMO_INV); exit $$rc

test: deps venv
	$(VENV)/bin/ruff check fabric tests bench
	$(VENV)/bin/pytest -q

bench: venv
	$(PY) bench/render_scale.py

clean:
	rm -rf build $(VENV)
