"""Running a rendered job where kubectl reaches a cluster: apply, follow the MPIJob, read the launcher's log,
say why pods wait or cannot start (stopping at once), delete."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

# a container's waiting reasons for an image the node has not and cannot get (kubelet pkg/kubelet/images/types.go)
IMAGE_WAITING = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName")


class K8sRunner:
    """Applies a job's manifests with kubectl, follows the MPIJob to Succeeded/Failed, returns the launcher's
    log and deletes the job. `skip` says why it cannot run here (render-only)."""

    skip = ""

    def __init__(self, namespace: str, kubectl: str | None = None, poll_s: float = 5.0) -> None:
        self.namespace, self.poll_s = namespace, poll_s
        self.kubectl = kubectl or shutil.which("kubectl") or ""
        if not self.kubectl:
            self.skip = "kubectl not found here (render-only)"
            return
        try:
            p = self._k(["get", "--raw", "/readyz", "--request-timeout=5s"], timeout=15)
            if p.returncode != 0:
                self.skip = f"kubectl cannot reach a cluster: {(p.stderr.strip().splitlines() or [''])[-1]}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.skip = f"kubectl: {exc}"

    def _k(self, args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.kubectl, *args], capture_output=True, text=True, timeout=timeout, check=False)

    def status(self, name: str) -> tuple[str, str]:
        """(Succeeded | Failed | Running, message) from the MPIJob's conditions."""
        p = self._k(["get", "mpijob", name, "-n", self.namespace, "-o", "json"], timeout=30)
        if p.returncode != 0:
            return "Failed", f"kubectl get mpijob {name}: {p.stderr.strip()}"
        try:
            conds = json.loads(p.stdout).get("status", {}).get("conditions", [])
        except json.JSONDecodeError:
            return "Running", ""
        for c in conds:
            if c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True":
                return c["type"], c.get("message", "")
        return "Running", ""

    def pending(self, name: str) -> str:
        """Why the job waits, in the scheduler's words: its PodGroup's Unschedulable condition where Volcano
        wrote one (the gang's reason, with the origin where Volcano names one: `PodGroup nccl-su1-gang
        NotEnoughResources: 2/5 tasks in gang unschedulable: pod group is not ready, 5 Pending, 5 minAvailable; …
        Origin reason is …: 0/12 nodes are unavailable: …`, and what a hard tier means where it names none),
        else the unscheduled pods' PodScheduled conditions (`2 pods Pending: 0/16 nodes are
        available: …`); '' when none waits."""
        sel = ["-n", self.namespace, "-l", f"roce-fabric/job={name}", "-o", "json"]
        gang = [f"PodGroup {g['metadata']['name']} {c.get('reason') or 'Unschedulable'}: {c.get('message', '')}"
                + _tier_note(g, c.get("message", ""))
                for g in self._items(["get", "podgroups.scheduling.volcano.sh", *sel])
                for c in g.get("status", {}).get("conditions", [])
                if c.get("type") == "Unschedulable" and c.get("status") == "True"]
        if gang:
            return "; ".join(gang)
        reasons: dict[str, int] = {}
        for pod in self._items(["get", "pods", *sel]):
            for c in pod.get("status", {}).get("conditions", []):
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    msg = c.get("message") or c.get("reason", "")
                    reasons[msg] = reasons.get(msg, 0) + 1
        return "; ".join(f"{n} pod{'s' * (n > 1)} Pending: {m}" for m, n in sorted(reasons.items()))

    def stuck(self, name: str) -> str:
        """Why pods of the job can never start, in the kubelet's words ('' when none is stuck): a container
        waiting on its image (`ErrImagePull`, `ImagePullBackOff`, `ErrImageNeverPull`, `InvalidImageName`: the image
        is not on the node and the node cannot pull it), or a pod sandbox the node failed to create (the
        `FailedCreatePodSandBox` event: the CNI chain refused a network, e.g. multus' delegate for a rail)."""
        pods = self._items(["get", "pods", "-n", self.namespace, "-l", f"roce-fabric/job={name}", "-o", "json"])
        node = {p["metadata"]["name"]: p.get("spec", {}).get("nodeName", "?") for p in pods}
        uids = {p["metadata"].get("uid") for p in pods}  # this run's pods, not an earlier job's of the same names
        out = []
        for p in pods:
            for c in p.get("status", {}).get("containerStatuses", []) + p.get("status", {}).get(
                    "initContainerStatuses", []):
                waiting = (c.get("state") or {}).get("waiting") or {}
                if waiting.get("reason") in IMAGE_WAITING:
                    out.append(f"pod {p['metadata']['name']} on node {node[p['metadata']['name']]}: image "
                               f"{c.get('image', '?')} is not on the node and was not pulled ({waiting['reason']}: "
                               f"{waiting.get('message', '')})")
        for e in self._items(["get", "events", "-n", self.namespace, "--field-selector",
                              "reason=FailedCreatePodSandBox", "-o", "json"]):
            pod = e.get("involvedObject", {}).get("name", "")
            if e.get("involvedObject", {}).get("uid") in uids:  # the node as the kubelet that reported it names it
                # (the pod read above may predate its binding)
                host = (e.get("source") or {}).get("host") or e.get("reportingInstance") or node[pod]
                out.append(f"pod {pod} on node {host}: the node could not create the pod sandbox: "
                           f"{e.get('message', '')}")
        return "; ".join(dict.fromkeys(out))

    def _items(self, args: list[str]) -> list[dict[str, Any]]:
        """The objects `kubectl get … -o json` lists; none where it fails (e.g. no PodGroup kind: no Volcano)."""
        p = self._k(args, timeout=30)
        try:
            return list(json.loads(p.stdout).get("items", [])) if p.returncode == 0 else []
        except json.JSONDecodeError:
            return []

    def topology_problems(self, manifest: Path) -> list[str]:
        """What in the cluster's HyperNodes keeps the job's `networkTopology` tier from meaning what it says
        (fabric.export.kubernetes.hypernode_problems); none for a job without one, or where the HyperNodes cannot
        be listed (no such kind, not allowed to: the tool cannot know, Volcano still enforces the tier)."""
        from fabric.export.kubernetes import hypernode_problems

        groups = [d["spec"] for d in yaml.safe_load_all(manifest.read_text())
                  if isinstance(d, dict) and d.get("kind") == "PodGroup" and isinstance(d.get("spec"), dict)]
        tiers = [g["networkTopology"].get("highestTierAllowed") for g in groups if g.get("networkTopology")]
        if not tiers:
            return []
        p = self._k(["get", "hypernodes.topology.volcano.sh", "-o", "json"], timeout=30)
        try:
            listed = json.loads(p.stdout).get("items", []) if p.returncode == 0 else None
        except json.JSONDecodeError:
            listed = None
        return [] if listed is None else hypernode_problems(listed, tiers[0])

    def logs(self, name: str) -> str:
        """The launcher's log: its container's output, as the kubelet serves it through the API server."""
        return self._k(["logs", "-n", self.namespace, f"job/{name}-launcher", "--tail=-1"], timeout=60).stdout

    def run(self, manifest: Path, name: str, timeout: float, networks: Path | None = None,
            progress: Any = None) -> tuple[str, str]:
        """(launcher log, error); the error is empty when the MPIJob succeeded."""
        files = [*(["-f", str(networks)] if networks else []), "-f", str(manifest)]
        try:
            # first as the API server would take it, then the HyperNodes the job's tier needs: a refusal leaves
            # nothing on the cluster
            p = self._k(["apply", "--server-side", "--force-conflicts", "--dry-run=server", *files], timeout=60)
            if p.returncode != 0:
                return "", f"kubectl apply: {_why_refused(p.stderr.strip())}"
            if problems := self.topology_problems(manifest):
                return "", f"{manifest.name}: not applied: " + "; ".join(problems)
            p = self._k(["apply", "--server-side", "--force-conflicts", *files], timeout=60)
            if p.returncode != 0:
                return "", f"kubectl apply: {_why_refused(p.stderr.strip())}"
            deadline = time.monotonic() + timeout
            state, msg = "Running", ""
            while time.monotonic() < deadline:
                state, msg = self.status(name)
                if state != "Running":
                    break
                if why := self.stuck(name):
                    return self.logs(name), f"MPIJob {name} cannot start: {why}"
                if progress:
                    progress(f"{name}: running")
                time.sleep(self.poll_s)
            logs = self.logs(name)
            if state == "Succeeded":
                return logs, ""
            if state == "Running":
                pending = self.pending(name)
                return logs, f"MPIJob {name} not finished after {timeout:.0f}s" + (f": {pending}" if pending else "")
            return logs, f"MPIJob {name} failed: {msg}"
        except subprocess.TimeoutExpired as exc:
            return "", f"kubectl: {exc}"
        finally:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._k(["delete", "-f", str(manifest), "--ignore-not-found", "--wait=false"], timeout=60)


def _tier_note(group: dict[str, Any], message: str) -> str:
    """What Volcano leaves unsaid for a gang with a hard `networkTopology`: it tries the gang whole in each
    HyperNode up to the tier, and its reason names no node (v1.15.1: `… 5 minAvailable; Pending: 5
    Unschedulable`) or only those of the last HyperNode it tried (`Origin reason is …: In hyperNode …-su2: …`)."""
    topo = (group.get("spec") or {}).get("networkTopology") or {}
    if topo.get("mode") != "hard":
        return ""
    last = "; Volcano's origin reason is the last HyperNode it tried" if "In hyperNode" in message else ""
    return (f" (networkTopology hard, highestTierAllowed {topo.get('highestTierAllowed')}: no HyperNode of that tier "
            f"or below holds the whole gang{last})")


def _why_refused(stderr: str) -> str:
    """The API server's refusal, with the cause named where it is Volcano's age: the PodGroup's `networkTopology`
    (the job's HyperNode tier) exists from Volcano v1.11 on, and a v1.10 API server refuses it on server-side
    apply (`.spec.networkTopology: field not declared in schema`)."""
    if "networkTopology" in stderr and "not declared in schema" in stderr:
        return ("this cluster's Volcano PodGroup has no spec.networkTopology (Volcano before v1.11, no HyperNode "
                "tiers), so the job's tier cannot be enforced there; upgrade Volcano to v1.11 or later. "
                f"The API server said: {stderr}")
    return stderr
