#!/bin/sh
# Lossless QoS of spine1 through iproute2 dcb (mlxsw Spectrum switchdev), rendered by fabric.
# DSCP→priority, ETS and PFC on priorities 3. ECN/RED thresholds
# (TC0 150000-1500000 B 100%, TC3 150000-1500000 B 100%)
# need the tc ETS/RED qdisc tree of the switch driver and are not rendered for this target.
set -eu
dcb app replace dev swp1 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev swp1 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0
dcb pfc set dev swp1 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
dcb app replace dev swp2 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev swp2 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0
dcb pfc set dev swp2 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
dcb app replace dev swp3 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev swp3 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0
dcb pfc set dev swp3 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
dcb app replace dev swp4 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:0 25:0 26:3 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev swp4 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0
dcb pfc set dev swp4 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
