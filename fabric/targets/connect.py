"""Where and how to reach each switch: address, netmiko device type, credentials, host-key trust.

Credentials come from the inventory's `access` section, which names environment variables and files
only: the username (`username` or `$<username_env>`), the password (`$<password_env>`, optional), a
key file, and an SSH agent when `SSH_AUTH_SOCK` is set. Host keys are verified against `known_hosts`.

When a lab of the fabric is running (`fabric lab up`), its switches are reached at their management
addresses with the lab's user, key and known_hosts (verified), as FRR instances with their own
config dir and vty socket. `--insecure-lab` skips host-key checks and is refused without a lab.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr

from fabric.design.intent import FabricIntent, SwitchIntent
from fabric.errors import UsageError
from fabric.render import render_switch


def device_type(target: str) -> str:
    """netmiko device type per target (community SONiC has none: bash `config …` via `linux`)."""
    if target == "eos":
        return "arista_eos"
    if target == "nvue":
        from netmiko.ssh_dispatcher import CLASS_MAPPER

        return "cumulus_linux" if "cumulus_linux" in CLASS_MAPPER else "linux"
    return "linux"


class Credentials(BaseModel):
    """Resolved at run time from the environment; `password` is never printed or stored."""

    model_config = ConfigDict(frozen=True)
    username: str
    password: SecretStr | None = None
    key_file: str | None = None
    use_agent: bool = False
    known_hosts: str | None = None  # None: host keys not verified (--insecure-lab only)
    port: int = 22


class Endpoint(BaseModel):
    """One switch to connect to, with the intended configuration text for its target."""

    device: str
    target: str
    host: str
    device_type: str
    intended: str
    options: dict[str, Any] = {}  # driver options (FRR dirs in the lab)


def credentials(access: Any, *, lab: Any = None, insecure: bool = False) -> Credentials:
    """Credentials from the environment and access settings, or the lab's own key."""
    if lab is not None:
        return Credentials(username=lab.ssh_user, key_file=lab.ssh_key, port=22,
                           known_hosts=None if insecure else lab.known_hosts)
    user = access.username or os.environ.get(access.username_env) or ""
    if not user:
        raise UsageError(f"no SSH username: set access.username in the inventory or ${access.username_env}")
    pw = os.environ.get(access.password_env)
    key = str(Path(access.key_file).expanduser()) if access.key_file else None
    if key and not Path(key).exists():
        raise UsageError(f"access.key_file: expected an existing key file, found {key!r}")
    kh = str(Path(access.known_hosts).expanduser())
    if not Path(kh).exists():
        raise UsageError(f"access.known_hosts: expected an existing known_hosts file, found {kh!r} "
                         "(host keys are verified)")
    agent = bool(os.environ.get("SSH_AUTH_SOCK"))
    if not (pw or key or agent):
        raise UsageError(f"no SSH credential: set ${access.password_env}, access.key_file or run an SSH agent")
    return Credentials(username=user, password=SecretStr(pw) if pw else None, key_file=key, use_agent=agent,
                       known_hosts=kh, port=access.port)


def endpoints(fabric: FabricIntent, names: list[str], *, lab: Any = None) -> list[Endpoint]:
    """Endpoints of the named switches; in a lab, FRR with the lab's renamed ports and directories."""
    from fabric.lab.plan import rename_ports

    eps = []
    for name in names:
        sw: SwitchIntent = fabric.switches[name]
        files = render_switch(sw, fabric)
        if lab is not None:
            node = lab.node(name)
            d = str(lab.frr_dir(name))
            eps.append(Endpoint(device=name, target="frr", host=node.address, device_type="linux",
                                intended=rename_ports(files["frr.conf"], node.ifnames),
                                options={"confdir": d, "vty_socket": d, "workdir": str(lab.dir / "push")}))
            continue
        text = {"frr": "frr.conf", "sonic": "config_db.json", "nvue": "nvue-patch.yaml",
                "eos": "running-config.cfg"}[sw.target]
        eps.append(Endpoint(device=name, target=sw.target, host=sw.management.split("/")[0],
                            device_type=device_type(sw.target), intended=files[text]))
    return eps


def connect(ep: Endpoint, cred: Credentials, *, timeout: float = 10) -> Any:
    """An open netmiko connection; host key verified against known_hosts unless it is None."""
    from netmiko import ConnectHandler

    params: dict[str, Any] = dict(
        device_type=ep.device_type, host=ep.host, port=cred.port, username=cred.username,
        use_keys=bool(cred.key_file or cred.use_agent), allow_agent=cred.use_agent,
        conn_timeout=timeout, auth_timeout=timeout, banner_timeout=timeout, fast_cli=True,
    )
    if cred.key_file:
        params["key_file"] = cred.key_file
    if cred.password is not None:
        params["password"] = cred.password.get_secret_value()
        if ep.device_type == "arista_eos":
            params["secret"] = params["password"]
    if cred.known_hosts:
        params.update(ssh_strict=True, system_host_keys=False, alt_host_keys=True, alt_key_file=cred.known_hosts)
    else:
        params.update(ssh_strict=False, system_host_keys=False, alt_host_keys=False)
    return ConnectHandler(**params)
