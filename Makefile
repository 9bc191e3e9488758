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

demo: deps venv
	$(FABRIC) validate inventories/example
	$(FABRIC) plan --offline inventories/example
	$(FABRIC) render inventories/example -o build/example
	$(FABRIC) lab up inventories/example
	rc=0; \
	$(FABRIC) lab status inventories/example || rc=$$?; \
	if $(FABRIC) hosts apply --help 2>/dev/null | grep -q -- '--lab'; then \
	  $(FABRIC) hosts apply inventories/example --lab || rc=$$?; fi; \
	$(FABRIC) accept inventories/example --lab -o build/example/accept || rc=$$?; \
	$(FABRIC) lab down inventories/example; exit $$rc

test: deps venv
	$(VENV)/bin/ruff check fabric tests bench
	$(VENV)/bin/pytest -q

bench: venv
	$(PY) bench/render_scale.py

clean:
	rm -rf build $(VENV)
