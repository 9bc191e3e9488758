"""Judging a perftest-between-pods job from its launcher's log: one measurement per pair, from the sections
between the begin/end marks the launcher script prints (fabric.accept.k8s.manifests.perftest_pod_job)."""

from __future__ import annotations

from fabric.accept.k8s.manifests import MARK, PodJob
from fabric.accept.results import Measurement


def judge_pairs(job: PodJob, log: str, threshold: dict[int, float], higher_is_better: bool = True) -> list[Measurement]:
    """One measurement per pair from the launcher's log (sections between the begin/end marks)."""
    from fabric.accept.tools import TOOLS

    sections: dict[str, tuple[list[str], int | None]] = {}
    current: str | None = None
    for line in log.splitlines():
        if line.startswith(f"{MARK} begin "):
            current = line.split()[2]
            sections[current] = ([], None)
        elif line.startswith(f"{MARK} end ") and current:
            rc = line.rsplit("rc=", 1)[-1]
            sections[current] = (sections[current][0], int(rc) if rc.isdigit() else 1)
            current = None
        elif current:
            sections[current][0].append(line)
    tool = TOOLS[job.tool]()
    out: list[Measurement] = []
    for p in (p for rd in job.pairs for p in rd):
        m = Measurement(rail=p.rail, src=p.client, dst=p.server, unit=tool.unit, tool=job.tool,
                        threshold=threshold.get(p.rail))
        body, rc = sections.get(p.tag, ([], None))
        text = "\n".join(body) + "\n"
        try:
            if rc is None:
                raise RuntimeError("no result in the launcher log")
            m.value = round(tool.value(text, ""), 3)
            if m.threshold is not None:
                m.ok = m.value >= m.threshold if higher_is_better else m.value <= m.threshold
            if rc != 0:
                m.ok, m.detail = False, f"exit {rc}"
        except Exception as exc:  # a failed pair is a failed link, never a crash
            last = next((x for x in reversed(body) if x.strip()), "")
            m.ok, m.detail = False, f"no result: {str(exc).splitlines()[0]}" + (f" ({last.strip()})" if last else "")
        out.append(m)
    return out
