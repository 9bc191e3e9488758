#!/bin/sh
# Linux interface setup of spine1 (Linux/FRR white-box), rendered by fabric. Idempotent.
set -eu
sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
sysctl -qw net.ipv4.fib_multipath_hash_policy=1
# Neighbor table sized for 8 neighbors; entries age out after 300 s.
# neigh/default exists only in the initial network namespace (a container or lab namespace shares the host's).
if [ -e /proc/sys/net/ipv4/neigh/default/gc_thresh1 ]; then
sysctl -qw net.ipv4.neigh.default.gc_thresh1=1024 net.ipv4.neigh.default.gc_thresh2=2048 net.ipv4.neigh.default.gc_thresh3=4096
sysctl -qw net.ipv6.neigh.default.gc_thresh1=1024 net.ipv6.neigh.default.gc_thresh2=2048 net.ipv6.neigh.default.gc_thresh3=4096
sysctl -qw net.ipv4.neigh.default.base_reachable_time_ms=300000
fi
ip addr replace 10.254.0.1/32 dev lo
ip link set dev swp1 mtu 9216 up
ip link set dev swp2 mtu 9216 up
ip link set dev swp3 mtu 9216 up
ip link set dev swp4 mtu 9216 up
