"""NIC QoS and DCQCN on mlx5: `mlnx_qos` (trust, dscp2prio, PFC, prio→TC, ETS, cable length), RoCE
traffic class and RDMA-CM ToS, ECN enable per priority, CNP DSCP/priority and cc_params.

Every file is probed before it is used; what this host cannot do is a skipped item with the reason.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from fabric.design.intent import HostIntent, RailIntent
from fabric.errors import InputError
from fabric.host.step import Step, change, fail, same, skip
from fabric.host.sysfs import int_file_step, pci_address
from fabric.parsers.mlnx_qos import MlnxQos, parse_mlnx_qos

PORT = 1


def csv(values: list[int] | list[str]) -> str:
    return ",".join(str(v) for v in values)


class MlnxQosTool:
    """Runs one `mlnx_qos` executable; reads with `-i IF -a`, sets with one option group per call."""

    def __init__(self, exe: str):
        self.exe = exe

    def run(self, netdev: str, *args: str) -> str:
        proc = subprocess.run([self.exe, "-i", netdev, *args], capture_output=True, text=True, timeout=30, check=False)
        if proc.returncode != 0:
            text = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()
            raise RuntimeError(f"mlnx_qos {' '.join(args)}: {text[-1]}")
        return proc.stdout

    def read(self, netdev: str) -> MlnxQos:
        return parse_mlnx_qos(self.run(netdev, "-a"), file=f"mlnx_qos -i {netdev}")

    def setter(self, netdev: str, *args: str) -> Callable[[], None]:
        def run() -> None:
            self.run(netdev, *args)

        return run


def _prio_tc(state: MlnxQos) -> list[int | None]:
    out: list[int | None] = [None] * 8
    for tc in state.tcs:
        for p in tc.priorities:
            if 0 <= p < 8:
                out[p] = tc.tc
    return out


def _ets(tsa: list[str], bw: list[int]) -> str:
    return f"tsa {csv(tsa)} bw {csv(bw)}"


def qos_steps(intent: HostIntent, rail: RailIntent, tool: MlnxQosTool | None) -> list[Step]:
    """mlnx_qos settings of one rail NIC, compared item by item with what mlnx_qos prints."""
    nd, q = rail.netdev, intent.nic_qos
    if tool is None:
        return [
            skip(
                "mlnx_qos not found (install mlnx-tools or pass --mlnx-qos PATH)",
                section="qos",
                target=nd,
                name="trust, dscp2prio, pfc, prio_tc, ets, cable_len",
            )
        ]
    try:
        state = tool.read(nd)
    except (OSError, RuntimeError, subprocess.TimeoutExpired, InputError) as exc:
        return [fail(str(exc).splitlines()[0], section="qos", target=nd, name="read")]
    steps: list[Step] = []

    def item(name: str, current: object, desired: object, *args: str) -> None:
        cur, want = (None if current is None else str(current)), str(desired)
        if cur == want:
            steps.append(same(section="qos", target=nd, name=name, current=cur))
        else:
            steps.append(change(tool.setter(nd, *args), section="qos", target=nd, name=name, current=cur, desired=want))

    item("trust", state.trust, q.trust, "--trust", q.trust)
    if q.trust == "dscp" and q.dscp2prio:
        have = state.dscp2prio if state.trust == "dscp" else {}
        want = dict(sorted(q.dscp2prio.items()))
        cur = {d: have.get(d) for d in want}
        args = [a for d, p in want.items() if have.get(d) != p for a in ("--dscp2prio", f"set,{d},{p}")]
        item(
            "dscp2prio",
            csv([f"{d}:{p}" for d, p in cur.items()]),
            csv([f"{d}:{p}" for d, p in want.items()]),
            *args,
        )
    item("pfc", csv([int(b) for b in state.pfc_enabled]), csv(q.pfc), "--pfc", csv(q.pfc))
    prio_tc = _prio_tc(state)
    item("prio_tc", None if None in prio_tc else csv(prio_tc), csv(q.prio_tc), "--prio_tc", csv(q.prio_tc))
    tcs = {tc.tc: tc for tc in state.tcs}
    want_bw = [bw if tsa == "ets" else 0 for tsa, bw in zip(q.tsa, q.tcbw, strict=True)]
    have_ets = None
    if all(i in tcs for i in range(8)):
        have_ets = _ets(
            [tcs[i].tsa for i in range(8)],
            [(tcs[i].bw_percent or 0) if tcs[i].tsa == "ets" else 0 for i in range(8)],
        )
    item("ets", have_ets, _ets(list(q.tsa), want_bw), "--tsa", csv(list(q.tsa)), "--tcbw", csv(want_bw))
    if state.cable_len is not None:
        item("cable_len", state.cable_len, rail.cable_m, "--cable_len", str(rail.cable_m))
    return steps


def _rdma_missing(sysfs_root: Path, rail: RailIntent) -> str | None:
    if not (sysfs_root / "class" / "infiniband" / rail.rdma).exists():
        return f"no RDMA device {rail.rdma} ({sysfs_root}/class/infiniband/{rail.rdma})"
    return None


def roce_steps(intent: HostIntent, rail: RailIntent, sysfs_root: Path) -> list[Step]:
    """RoCE traffic class (verbs default) and RDMA-CM default ToS of one RDMA device."""
    tos = intent.nic_qos.roce_tos
    if reason := _rdma_missing(sysfs_root, rail):
        return [skip(reason, section="roce", target=rail.rdma, name="traffic_class, rdma_cm tos", desired=str(tos))]
    steps = []
    tc = sysfs_root / "class" / "infiniband" / rail.rdma / "tc" / str(PORT) / "traffic_class"
    if tc.exists():
        steps.append(int_file_step(tc, tos, section="roce", target=rail.rdma, name="traffic_class"))
    else:
        steps.append(
            skip(
                f"{tc} not present (MLNX_OFED only)",
                section="roce",
                target=rail.rdma,
                name="traffic_class",
                desired=str(tos),
            )
        )
    cm = sysfs_root / "kernel" / "config" / "rdma_cm"
    if not cm.is_dir():
        steps.append(
            skip(
                f"configfs rdma_cm not mounted ({cm}; modprobe rdma_cm, mount configfs)",
                section="roce",
                target=rail.rdma,
                name="rdma_cm default_roce_tos",
                desired=str(tos),
            )
        )
        return steps
    dev = cm / rail.rdma
    path = dev / "ports" / str(PORT) / "default_roce_tos"
    if dev.is_dir():
        steps.append(int_file_step(path, tos, section="roce", target=rail.rdma, name="rdma_cm default_roce_tos"))
    else:

        def create() -> None:  # configfs creates ports/<n>/ when the device group is made
            dev.mkdir()
            path.write_text(f"{tos}\n")

        steps.append(
            change(create, section="roce", target=rail.rdma, name="rdma_cm default_roce_tos", desired=str(tos))
        )
    return steps


def dcqcn_steps(intent: HostIntent, rail: RailIntent, sysfs_root: Path) -> list[Step]:
    """ECN enable per priority (roce_np/roce_rp), CNP DSCP and 802.1p priority, cc_params."""
    nd, d, q = rail.netdev, intent.dcqcn, intent.nic_qos
    ecn = sysfs_root / "class" / "net" / nd / "ecn"
    steps: list[Step] = []
    if not ecn.is_dir():
        steps.append(
            skip(
                f"{ecn} not present (mlx5 with MLNX_OFED only)",
                section="dcqcn",
                target=nd,
                name="roce_np/roce_rp enable",
            )
        )
    else:
        for proto, prios in (("roce_np", d.np_priorities), ("roce_rp", d.rp_priorities)):
            for p in prios:
                f = ecn / proto / "enable" / str(p)
                if f.exists():
                    steps.append(int_file_step(f, 1, section="dcqcn", target=nd, name=f"{proto}/enable/{p}"))
                else:
                    steps.append(
                        fail(
                            f"{f} not present",
                            section="dcqcn",
                            target=nd,
                            name=f"{proto}/enable/{p}",
                            desired="1",
                        )
                    )
    bdf = pci_address(sysfs_root, f"class/infiniband/{rail.rdma}", f"class/net/{nd}")
    debug = sysfs_root / "kernel" / "debug" / "mlx5" / bdf / "cc_params" if bdf else None
    for name, value, files in (
        ("cnp_dscp", q.cnp_dscp, ["roce_np/cnp_dscp", "roce_np/params/cnp_dscp", "np_cnp_dscp"]),
        (
            "cnp_802p_prio",
            q.cnp_priority,
            ["roce_np/cnp_802p_prio", "roce_np/params/cnp_802p_prio", "np_cnp_prio"],
        ),
    ):
        candidates = [ecn / f for f in files[:2]] + ([debug / files[2]] if debug else [])
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            steps.append(
                skip(
                    f"no {name} file (looked for ecn/{files[0]}, ecn/{files[1]}, "
                    f"debugfs mlx5/<pci>/cc_params/{files[2]})",
                    section="dcqcn",
                    target=nd,
                    name=name,
                    desired=str(value),
                )
            )
        else:
            steps.append(int_file_step(found, value, section="dcqcn", target=nd, name=name))
    for name, value in sorted(d.cc_params.items()):
        proto = "roce_np" if name.startswith("np_") else "roce_rp"
        candidates = ([debug / name] if debug else []) + [ecn / proto / "params" / name]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            steps.append(
                skip(
                    f"no cc_params file for {name} (debugfs mlx5/<pci>/cc_params/{name} or ecn/{proto}/params/{name})",
                    section="dcqcn",
                    target=rail.rdma,
                    name=f"cc_params/{name}",
                    desired=str(value),
                )
            )
        else:
            steps.append(int_file_step(found, value, section="dcqcn", target=rail.rdma, name=f"cc_params/{name}"))
    return steps
