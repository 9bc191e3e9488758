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
if command -v mlnx_qos >/dev/null 2>&1; then
    mlnx_qos -i rail1 --trust dscp >/dev/null
    mlnx_qos -i rail1 --pfc 0,0,0,1,0,0,0,0 --prio_tc 0,0,0,3,0,0,6,0 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0 --cable_len 5 >/dev/null
fi
tc=/sys/class/infiniband/mlx5_0/tc/1/traffic_class
[ -e "$tc" ] && echo 106 > "$tc"
command -v cma_roce_tos >/dev/null 2>&1 && cma_roce_tos -d mlx5_0 -p 1 -t 106 >/dev/null
ecn=/sys/class/net/rail1/ecn
[ -e $ecn/roce_np/enable/3 ] && echo 1 > $ecn/roce_np/enable/3
[ -e $ecn/roce_rp/enable/3 ] && echo 1 > $ecn/roce_rp/enable/3
[ -e $ecn/roce_np/cnp_dscp ] && echo 48 > $ecn/roce_np/cnp_dscp
[ -e $ecn/roce_np/cnp_802p_prio ] && echo 6 > $ecn/roce_np/cnp_802p_prio

# --- rail 2: mlx5_1 / rail2, 100G to leaf-su1-r2:swp1
ip link set dev rail2 mtu 9000 up
ip addr replace 10.100.1.2/24 dev rail2
ip route replace 10.100.1.0/24 dev rail2 src 10.100.1.2 table 102
ip route replace 10.100.0.0/16 via 10.100.1.1 dev rail2 table 102
ip rule show priority 1002 | grep -q "from 10.100.1.2 lookup 102" || ip rule add from 10.100.1.2 table 102 priority 1002
if command -v mlnx_qos >/dev/null 2>&1; then
    mlnx_qos -i rail2 --trust dscp >/dev/null
    mlnx_qos -i rail2 --pfc 0,0,0,1,0,0,0,0 --prio_tc 0,0,0,3,0,0,6,0 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0 --cable_len 5 >/dev/null
fi
tc=/sys/class/infiniband/mlx5_1/tc/1/traffic_class
[ -e "$tc" ] && echo 106 > "$tc"
command -v cma_roce_tos >/dev/null 2>&1 && cma_roce_tos -d mlx5_1 -p 1 -t 106 >/dev/null
ecn=/sys/class/net/rail2/ecn
[ -e $ecn/roce_np/enable/3 ] && echo 1 > $ecn/roce_np/enable/3
[ -e $ecn/roce_rp/enable/3 ] && echo 1 > $ecn/roce_rp/enable/3
[ -e $ecn/roce_np/cnp_dscp ] && echo 48 > $ecn/roce_np/cnp_dscp
[ -e $ecn/roce_np/cnp_802p_prio ] && echo 6 > $ecn/roce_np/cnp_802p_prio

# --- rail 3: mlx5_2 / rail3, 100G to leaf-su1-r3:swp1
ip link set dev rail3 mtu 9000 up
ip addr replace 10.100.2.2/24 dev rail3
ip route replace 10.100.2.0/24 dev rail3 src 10.100.2.2 table 103
ip route replace 10.100.0.0/16 via 10.100.2.1 dev rail3 table 103
ip rule show priority 1003 | grep -q "from 10.100.2.2 lookup 103" || ip rule add from 10.100.2.2 table 103 priority 1003
if command -v mlnx_qos >/dev/null 2>&1; then
    mlnx_qos -i rail3 --trust dscp >/dev/null
    mlnx_qos -i rail3 --pfc 0,0,0,1,0,0,0,0 --prio_tc 0,0,0,3,0,0,6,0 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0 --cable_len 5 >/dev/null
fi
tc=/sys/class/infiniband/mlx5_2/tc/1/traffic_class
[ -e "$tc" ] && echo 106 > "$tc"
command -v cma_roce_tos >/dev/null 2>&1 && cma_roce_tos -d mlx5_2 -p 1 -t 106 >/dev/null
ecn=/sys/class/net/rail3/ecn
[ -e $ecn/roce_np/enable/3 ] && echo 1 > $ecn/roce_np/enable/3
[ -e $ecn/roce_rp/enable/3 ] && echo 1 > $ecn/roce_rp/enable/3
[ -e $ecn/roce_np/cnp_dscp ] && echo 48 > $ecn/roce_np/cnp_dscp
[ -e $ecn/roce_np/cnp_802p_prio ] && echo 6 > $ecn/roce_np/cnp_802p_prio

# --- rail 4: mlx5_3 / rail4, 100G to leaf-su1-r4:swp1
ip link set dev rail4 mtu 9000 up
ip addr replace 10.100.3.2/24 dev rail4
ip route replace 10.100.3.0/24 dev rail4 src 10.100.3.2 table 104
ip route replace 10.100.0.0/16 via 10.100.3.1 dev rail4 table 104
ip rule show priority 1004 | grep -q "from 10.100.3.2 lookup 104" || ip rule add from 10.100.3.2 table 104 priority 1004
if command -v mlnx_qos >/dev/null 2>&1; then
    mlnx_qos -i rail4 --trust dscp >/dev/null
    mlnx_qos -i rail4 --pfc 0,0,0,1,0,0,0,0 --prio_tc 0,0,0,3,0,0,6,0 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0 --cable_len 5 >/dev/null
fi
tc=/sys/class/infiniband/mlx5_3/tc/1/traffic_class
[ -e "$tc" ] && echo 106 > "$tc"
command -v cma_roce_tos >/dev/null 2>&1 && cma_roce_tos -d mlx5_3 -p 1 -t 106 >/dev/null
ecn=/sys/class/net/rail4/ecn
[ -e $ecn/roce_np/enable/3 ] && echo 1 > $ecn/roce_np/enable/3
[ -e $ecn/roce_rp/enable/3 ] && echo 1 > $ecn/roce_rp/enable/3
[ -e $ecn/roce_np/cnp_dscp ] && echo 48 > $ecn/roce_np/cnp_dscp
[ -e $ecn/roce_np/cnp_802p_prio ] && echo 6 > $ecn/roce_np/cnp_802p_prio
true
