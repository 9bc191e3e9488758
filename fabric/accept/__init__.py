"""Acceptance tests: parsers and checks for perftest, nccl-tests, iperf3 and host QoS/counter outputs."""
