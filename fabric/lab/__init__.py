"""The lab: a whole fabric on one Linux machine, for real.

A network namespace per switch and host, a veth pair per cable (interfaces named after the ports,
host side after the rail netdev), the rendered `interfaces.sh` and real FRR (zebra, bgpd, staticd,
one instance per namespace, all files in the state dir) on every switch, host rails configured by
the host agent (`fabric.host.agent.apply`), and OpenSSH on every node on a management bridge in the
root namespace with a lab-generated ed25519 key (root, key only).

Other capabilities reach the lab only as a `fabric.access.Site` (`fabric.lab.site.LabSite`, opened by
the commands' `--lab`). The lab's own API::

    from fabric.lab.state import load_state
    st = load_state("example")            # LabState of a running lab (UsageError if none)
    node = st.nodes["leaf-su1-r1"]        # NodeState: netns, management_address, address, ifnames, pids
    st.run("gpu-su1-01", ["ip", "-j", "addr"])   # CompletedProcess of a command in the node's namespace
    st.ns_argv(node_name, argv)           # `ip netns exec <ns> env PATH=<node bin>:… argv` (vtysh reaches the node)
    st.vtysh("spine1", "show bgp summary json")  # vtysh in the switch's FRR instance

    from fabric.lab import lifecycle, status, faults
    lifecycle.up(fabric_intent, inventory=..., prefix=..., management=...)  # → LabState
    lifecycle.down("example")
    status.lab_status(st, fabric_intent)  # LabStatus: sessions, ECMP, pings, faults; .ok, .problems
    faults.link(st, "leaf-su1-r1:swp5", "down"); faults.throttle(st, "gpu-su1-01:rail1", "100mbit")
    faults.clear(st)

State lives in `/run/roce-fabric/lab/<fabric>/` (`FABRIC_LAB_STATE` replaces the base directory).
"""
