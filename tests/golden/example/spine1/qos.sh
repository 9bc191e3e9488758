#!/bin/sh
# Lossless QoS of spine1 (mlxsw Spectrum switchdev), rendered by fabric.
# dcb: DSCP→priority and PFC on priorities 3. tc: the egress queues, one `ets` band
# per traffic class (band b = TC 7-b: TC7 strict, TC6 strict, TC3 DWRR quantum 5000, TC0 DWRR quantum 5000),
# priomap from priority→TC; `red … ecn` on the ECN bands TC3 TC0.
# The qdisc replaces `dcb ets` (mlxsw takes ETS from one of the two, never both).
set -eu
dcb app replace dev swp1 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb pfc set dev swp1 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
tc qdisc replace dev swp1 root handle 1: ets bands 8 strict 2 quanta 1 1 5000 1 1 5000 priomap 7 7 7 4 7 7 1 7 7 7 7 7 7 7 7 7
tc qdisc replace dev swp1 parent 1:5 handle 15: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
tc qdisc replace dev swp1 parent 1:8 handle 18: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
dcb app replace dev swp2 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb pfc set dev swp2 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
tc qdisc replace dev swp2 root handle 1: ets bands 8 strict 2 quanta 1 1 5000 1 1 5000 priomap 7 7 7 4 7 7 1 7 7 7 7 7 7 7 7 7
tc qdisc replace dev swp2 parent 1:5 handle 15: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
tc qdisc replace dev swp2 parent 1:8 handle 18: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
dcb app replace dev swp3 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb pfc set dev swp3 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
tc qdisc replace dev swp3 root handle 1: ets bands 8 strict 2 quanta 1 1 5000 1 1 5000 priomap 7 7 7 4 7 7 1 7 7 7 7 7 7 7 7 7
tc qdisc replace dev swp3 parent 1:5 handle 15: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
tc qdisc replace dev swp3 parent 1:8 handle 18: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
dcb app replace dev swp4 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb pfc set dev swp4 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
tc qdisc replace dev swp4 root handle 1: ets bands 8 strict 2 quanta 1 1 5000 1 1 5000 priomap 7 7 7 4 7 7 1 7 7 7 7 7 7 7 7 7
tc qdisc replace dev swp4 parent 1:5 handle 15: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
tc qdisc replace dev swp4 parent 1:8 handle 18: red limit 3000000 min 150000 max 1500000 avpkt 1500 burst 101 probability 1 ecn
