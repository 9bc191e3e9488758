"""`K8sRunner.stuck` reads why a job's pods can never start from kubectl's replies (here a script answering as
kubectl does, with the objects' shapes of the Kubernetes API: Pod, and a kubelet's Event with `source.host` and
`reportingInstance`, the node that reported it)."""

from __future__ import annotations

import json
from pathlib import Path

from fabric.accept.k8s.runner import K8sRunner

POD = {"metadata": {"name": "pod-rail-bandwidth-worker-0", "uid": "49ec45fa"}, "spec": {}, "status": {}}
EVENT = {"involvedObject": {"kind": "Pod", "name": "pod-rail-bandwidth-worker-0", "uid": "49ec45fa"},
         "reason": "FailedCreatePodSandBox", "source": {"component": "kubelet", "host": "gpu-su1-0"},
         "reportingComponent": "kubelet", "reportingInstance": "gpu-su1-0",
         "message": 'Failed to create pod sandbox: plugin type="multus" failed (add): error adding container to '
                    'network "rail1": Link not found'}


def _kubectl(tmp_path: Path) -> str:
    (tmp_path / "pods.json").write_text(json.dumps({"items": [POD]}))
    (tmp_path / "events.json").write_text(json.dumps({"items": [EVENT]}))
    script = tmp_path / "kubectl"
    script.write_text(f'#!/bin/sh\ncase "$*" in\n  *" pods "*) cat {tmp_path}/pods.json ;;\n'
                      f'  *" events "*) cat {tmp_path}/events.json ;;\n  *) echo ok ;;\nesac\n')
    script.chmod(0o755)
    return str(script)


def test_a_sandbox_failure_names_the_node_that_reported_it_before_the_pod_read_shows_its_binding(
        tmp_path: Path) -> None:
    """The pods were read before the scheduler bound them (no `spec.nodeName` yet), the kubelet's event after: the
    message names the node from the event, not `?`."""
    runner = K8sRunner("training", kubectl=_kubectl(tmp_path))
    assert not runner.skip
    message = runner.stuck("pod-rail-bandwidth")
    assert message.startswith("pod pod-rail-bandwidth-worker-0 on node gpu-su1-0: the node could not create the pod "
                              "sandbox: "), message
    assert 'network "rail1": Link not found' in message
