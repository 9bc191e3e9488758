#!/bin/sh
# RoCE setup of gpu-su1-01 (SU 1), rendered by fabric. Idempotent: safe to run again.
# Rails: rail1 (mlx5_0) → leaf-su1-r1:swp1, rail2 (mlx5_1) → leaf-su1-r2:swp1, rail3 (mlx5_2) → leaf-su1-r3:swp1, rail4 (mlx5_3) → leaf-su1-r4:swp1
# The management interface eth0 is never touched.
set -eu

# Multi-rail sysctls: answer ARP only on the NIC that owns the address, loose reverse-path filter.
sysctl -qw net/ipv4/conf/rail1/arp_announce=2
sysctl -qw net/ipv4/conf/rail1/arp_ignore=1
sysctl -qw net/ipv4/conf/rail1/arp_notify=1
sysctl -qw net/ipv4/conf/rail1/rp_filter=2
sysctl -qw net/ipv4/conf/rail2/arp_announce=2
sysctl -qw net/ipv4/conf/rail2/arp_ignore=1
sysctl -qw net/ipv4/conf/rail2/arp_notify=1
sysctl -qw net/ipv4/conf/rail2/rp_filter=2
sysctl -qw net/ipv4/conf/rail3/arp_announce=2
sysctl -qw net/ipv4/conf/rail3/arp_ignore=1
sysctl -qw net/ipv4/conf/rail3/arp_notify=1
sysctl -qw net/ipv4/conf/rail3/rp_filter=2
sysctl -qw net/ipv4/conf/rail4/arp_announce=2
sysctl -qw net/ipv4/conf/rail4/arp_ignore=1
sysctl -qw net/ipv4/conf/rail4/arp_notify=1
sysctl -qw net/ipv4/conf/rail4/rp_filter=2
sysctl -qw net/ipv4/tcp_ecn=1

# --- rail 1: mlx5_0 / rail1, 100G to leaf-su1-r1:swp1
ip link set dev rail1 mtu 9000 up
ip addr replace 10.100.0.2/24 dev rail1
ip route replace 10.100.0.0/24 dev rail1 src 10.100.0.2 table 101
ip route replace 10.100.0.0/16 via 10.100.0.1 dev rail1 table 101
ip rule show priority 1001 | grep -q "from 10.100.0.2 lookup 101" || ip rule add from 10.100.0.2 table 101 priority 1001

# --- rail 2: mlx5_1 / rail2, 100G to leaf-su1-r2:swp1
ip link set dev rail2 mtu 9000 up
ip addr replace 10.100.1.2/24 dev rail2
ip route replace 10.100.1.0/24 dev rail2 src 10.100.1.2 table 102
ip route replace 10.100.0.0/16 via 10.100.1.1 dev rail2 table 102
ip rule show priority 1002 | grep -q "from 10.100.1.2 lookup 102" || ip rule add from 10.100.1.2 table 102 priority 1002

# --- rail 3: mlx5_2 / rail3, 100G to leaf-su1-r3:swp1
ip link set dev rail3 mtu 9000 up
ip addr replace 10.100.2.2/24 dev rail3
ip route replace 10.100.2.0/24 dev rail3 src 10.100.2.2 table 103
ip route replace 10.100.0.0/16 via 10.100.2.1 dev rail3 table 103
ip rule show priority 1003 | grep -q "from 10.100.2.2 lookup 103" || ip rule add from 10.100.2.2 table 103 priority 1003

# --- rail 4: mlx5_3 / rail4, 100G to leaf-su1-r4:swp1
ip link set dev rail4 mtu 9000 up
ip addr replace 10.100.3.2/24 dev rail4
ip route replace 10.100.3.0/24 dev rail4 src 10.100.3.2 table 104
ip route replace 10.100.0.0/16 via 10.100.3.1 dev rail4 table 104
ip rule show priority 1004 | grep -q "from 10.100.3.2 lookup 104" || ip rule add from 10.100.3.2 table 104 priority 1004

# --- NIC QoS, RoCE ToS and DCQCN (the same script runs at boot as roce-qos.service).
# Each item reports its own failure or skip and the rest still applies.
set +e
set -u
SYSFS="${SYSFS:-/sys}"
MLNX_QOS="${MLNX_QOS:-mlnx_qos}"
rc=0
log() { echo "roce-qos: $*"; }
put() {  # put VALUE FILE...: write VALUE to the first FILE that exists
  v=$1; shift
  for f in "$@"; do
    if [ -e "$f" ]; then echo "$v" > "$f" || { log "failed: $f"; rc=1; }; return 0; fi
  done
  log "skipped: none of $*"
}
qos() {
  if command -v "$MLNX_QOS" >/dev/null 2>&1; then
    "$MLNX_QOS" "$@" >/dev/null || { log "failed: mlnx_qos $*"; rc=1; }
  else log "skipped: mlnx_qos not installed ($*)"; fi
}
if [ ! -d "$SYSFS/kernel/config/rdma_cm" ]; then
  modprobe rdma_cm 2>/dev/null
  [ -d "$SYSFS/kernel/config" ] && ! mountpoint -q "$SYSFS/kernel/config" 2>/dev/null && mount -t configfs none "$SYSFS/kernel/config" 2>/dev/null
fi

# rail 1: rail1 (mlx5_0)
qos -i rail1 --trust dscp
qos -i rail1 --dscp2prio set,26,3 --dscp2prio set,48,6
qos -i rail1 --pfc 0,0,0,1,0,0,0,0
qos -i rail1 --prio_tc 0,0,0,3,0,0,6,0
qos -i rail1 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0
qos -i rail1 --cable_len 5
bdf=$(basename "$(readlink -f "$SYSFS/class/infiniband/"mlx5_0/device)" 2>/dev/null)
cc="$SYSFS/kernel/debug/mlx5/$bdf/cc_params"
put 106 "$SYSFS/class/infiniband/"mlx5_0/tc/1/traffic_class
if [ -d "$SYSFS/kernel/config/rdma_cm" ]; then
  mkdir -p "$SYSFS/kernel/config/rdma_cm/"mlx5_0 2>/dev/null
  put 106 "$SYSFS/kernel/config/rdma_cm/"mlx5_0/ports/1/default_roce_tos
else log "skipped: configfs rdma_cm not available"; fi
put 1 "$SYSFS/class/net/"rail1/ecn/roce_np/enable/3
put 1 "$SYSFS/class/net/"rail1/ecn/roce_rp/enable/3
put 48 "$SYSFS/class/net/"rail1/ecn/roce_np/cnp_dscp "$SYSFS/class/net/"rail1/ecn/roce_np/params/cnp_dscp "$cc/np_cnp_dscp"
put 6 "$SYSFS/class/net/"rail1/ecn/roce_np/cnp_802p_prio "$SYSFS/class/net/"rail1/ecn/roce_np/params/cnp_802p_prio "$cc/np_cnp_prio"

# rail 2: rail2 (mlx5_1)
qos -i rail2 --trust dscp
qos -i rail2 --dscp2prio set,26,3 --dscp2prio set,48,6
qos -i rail2 --pfc 0,0,0,1,0,0,0,0
qos -i rail2 --prio_tc 0,0,0,3,0,0,6,0
qos -i rail2 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0
qos -i rail2 --cable_len 5
bdf=$(basename "$(readlink -f "$SYSFS/class/infiniband/"mlx5_1/device)" 2>/dev/null)
cc="$SYSFS/kernel/debug/mlx5/$bdf/cc_params"
put 106 "$SYSFS/class/infiniband/"mlx5_1/tc/1/traffic_class
if [ -d "$SYSFS/kernel/config/rdma_cm" ]; then
  mkdir -p "$SYSFS/kernel/config/rdma_cm/"mlx5_1 2>/dev/null
  put 106 "$SYSFS/kernel/config/rdma_cm/"mlx5_1/ports/1/default_roce_tos
else log "skipped: configfs rdma_cm not available"; fi
put 1 "$SYSFS/class/net/"rail2/ecn/roce_np/enable/3
put 1 "$SYSFS/class/net/"rail2/ecn/roce_rp/enable/3
put 48 "$SYSFS/class/net/"rail2/ecn/roce_np/cnp_dscp "$SYSFS/class/net/"rail2/ecn/roce_np/params/cnp_dscp "$cc/np_cnp_dscp"
put 6 "$SYSFS/class/net/"rail2/ecn/roce_np/cnp_802p_prio "$SYSFS/class/net/"rail2/ecn/roce_np/params/cnp_802p_prio "$cc/np_cnp_prio"

# rail 3: rail3 (mlx5_2)
qos -i rail3 --trust dscp
qos -i rail3 --dscp2prio set,26,3 --dscp2prio set,48,6
qos -i rail3 --pfc 0,0,0,1,0,0,0,0
qos -i rail3 --prio_tc 0,0,0,3,0,0,6,0
qos -i rail3 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0
qos -i rail3 --cable_len 5
bdf=$(basename "$(readlink -f "$SYSFS/class/infiniband/"mlx5_2/device)" 2>/dev/null)
cc="$SYSFS/kernel/debug/mlx5/$bdf/cc_params"
put 106 "$SYSFS/class/infiniband/"mlx5_2/tc/1/traffic_class
if [ -d "$SYSFS/kernel/config/rdma_cm" ]; then
  mkdir -p "$SYSFS/kernel/config/rdma_cm/"mlx5_2 2>/dev/null
  put 106 "$SYSFS/kernel/config/rdma_cm/"mlx5_2/ports/1/default_roce_tos
else log "skipped: configfs rdma_cm not available"; fi
put 1 "$SYSFS/class/net/"rail3/ecn/roce_np/enable/3
put 1 "$SYSFS/class/net/"rail3/ecn/roce_rp/enable/3
put 48 "$SYSFS/class/net/"rail3/ecn/roce_np/cnp_dscp "$SYSFS/class/net/"rail3/ecn/roce_np/params/cnp_dscp "$cc/np_cnp_dscp"
put 6 "$SYSFS/class/net/"rail3/ecn/roce_np/cnp_802p_prio "$SYSFS/class/net/"rail3/ecn/roce_np/params/cnp_802p_prio "$cc/np_cnp_prio"

# rail 4: rail4 (mlx5_3)
qos -i rail4 --trust dscp
qos -i rail4 --dscp2prio set,26,3 --dscp2prio set,48,6
qos -i rail4 --pfc 0,0,0,1,0,0,0,0
qos -i rail4 --prio_tc 0,0,0,3,0,0,6,0
qos -i rail4 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0
qos -i rail4 --cable_len 5
bdf=$(basename "$(readlink -f "$SYSFS/class/infiniband/"mlx5_3/device)" 2>/dev/null)
cc="$SYSFS/kernel/debug/mlx5/$bdf/cc_params"
put 106 "$SYSFS/class/infiniband/"mlx5_3/tc/1/traffic_class
if [ -d "$SYSFS/kernel/config/rdma_cm" ]; then
  mkdir -p "$SYSFS/kernel/config/rdma_cm/"mlx5_3 2>/dev/null
  put 106 "$SYSFS/kernel/config/rdma_cm/"mlx5_3/ports/1/default_roce_tos
else log "skipped: configfs rdma_cm not available"; fi
put 1 "$SYSFS/class/net/"rail4/ecn/roce_np/enable/3
put 1 "$SYSFS/class/net/"rail4/ecn/roce_rp/enable/3
put 48 "$SYSFS/class/net/"rail4/ecn/roce_np/cnp_dscp "$SYSFS/class/net/"rail4/ecn/roce_np/params/cnp_dscp "$cc/np_cnp_dscp"
put 6 "$SYSFS/class/net/"rail4/ecn/roce_np/cnp_802p_prio "$SYSFS/class/net/"rail4/ecn/roce_np/params/cnp_802p_prio "$cc/np_cnp_prio"
exit $rc
