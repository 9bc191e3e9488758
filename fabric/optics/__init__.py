"""`fabric optics`: every pluggable module of the fabric — host rail NICs (`ethtool -m`) and switch ports
(each push driver's `transceivers()`) — judged against the module's own alarm/warning thresholds and,
optionally, against the vendor/part/firmware expected per link class; each located to its host, NIC,
leaf port and cable.

judge    lanes and module values against the thresholds; expected identity per link class
collect  reading hosts and switches of a site into rows placed in the fabric
"""
