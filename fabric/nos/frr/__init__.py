"""Linux/FRR white-box (what the lab runs): frr.conf + interface and QoS scripts, parser, frr-reload push."""
