"""How the tool reaches devices, decided in one place: credentials, SSH arguments, host-key policy — and
the `Site`, where the devices of one fabric are.

Credentials come from the inventory's `access` section, which names environment variables and files
only: the username (`username` or `$<username_env>`), the password (`$<password_env>`, switches only,
optional), a key file, and an SSH agent when `SSH_AUTH_SOCK` is set. Host keys are always verified
against a known_hosts file; the one exception is `--insecure-lab`, which a lab site alone accepts.

A `Site` is implemented by the inventory (`InventorySite`: the real switches and hosts at their
management addresses) and by the lab (`fabric.lab.site.LabSite`: namespaces on this machine;
`fabric.lab.site.VmSite`: namespaces in the VM lab's guest, reached by a local command per call). Plan,
apply, rollback, acceptance, counters and the host fleet take a Site and never ask which one it is.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from fabric.design.intent import FabricIntent
from fabric.errors import UsageError
from fabric.fast.batch import gc_paused
from fabric.fast.memo import Memo
from fabric.model.inventory import Access
from fabric.nos import NOS
from fabric.render import render_switch


class Credentials(BaseModel):
    """Resolved at run time; `password` is never printed or stored."""

    model_config = ConfigDict(frozen=True)
    username: str | None
    password: SecretStr | None = None
    key_file: str | None = None
    use_agent: bool = False
    known_hosts: str | None = None  # None: host keys not verified (a lab's own nodes with --insecure-lab only)
    port: int = 22
    reply_timeout: float | None = None  # the longest wait for a reply to one command (None: each command's own)


class SwitchEndpoint(BaseModel):
    """One switch to connect to, with the text of its intended configuration for its NOS."""

    device: str
    target: str
    address: str
    device_type: str
    intended: str
    options: dict[str, Any] = {}  # driver options (the lab's FRR directories)


def inventory_credentials(access: Access, *, need_secret: bool) -> Credentials:
    """Credentials from the access settings and the environment.

    `need_secret`: a password, key file or agent is required (netmiko to switches); the OpenSSH
    client to hosts may also use the user's default keys.
    """
    user = access.username or os.environ.get(access.username_env) or None
    if need_secret and not user:
        raise UsageError(f"no SSH username: set access.username in the inventory or ${access.username_env}")
    pw = os.environ.get(access.password_env) if need_secret else None
    key = str(Path(access.key_file).expanduser()) if access.key_file else None
    if key and not Path(key).exists():
        raise UsageError(f"access.key_file: expected an existing key file, found {key!r}")
    kh = str(Path(access.known_hosts).expanduser())
    if need_secret and not Path(kh).exists():
        raise UsageError(f"access.known_hosts: expected an existing known_hosts file, found {kh!r} "
                         "(host keys are verified)")
    agent = bool(os.environ.get("SSH_AUTH_SOCK"))
    if need_secret and not (pw or key or agent):
        raise UsageError(f"no SSH credential: set ${access.password_env}, access.key_file or run an SSH agent")
    return Credentials(username=user, password=SecretStr(pw) if pw else None, key_file=key, use_agent=agent,
                       known_hosts=kh, port=access.port)


def ssh_options(cred: Credentials, *, batch: bool = True, connect_timeout: int = 5) -> list[str]:
    """OpenSSH client options: key, user, port and the host-key policy."""
    out = ["-o", f"ConnectTimeout={connect_timeout}", "-p", str(cred.port)]
    if batch:
        out += ["-o", "BatchMode=yes"]
    if cred.known_hosts is None:
        out += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
    else:
        out += ["-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={cred.known_hosts}"]
    if cred.key_file:
        out += ["-i", cred.key_file, "-o", "IdentitiesOnly=yes"]
    if cred.username:
        out += ["-l", cred.username]
    return out


def ssh_argv(cred: Credentials, address: str, command: list[str] | None = None, *, batch: bool = True) -> list[str]:
    """argv of an OpenSSH client running `command` (one shell-quoted string) on `address`."""
    return ["ssh", *ssh_options(cred, batch=batch), address, *([shlex.join(command)] if command else [])]


def ansible_ssh_args(cred: Credentials) -> str:
    """`ansible_ssh_common_args`: the host-key policy (user, key and port go in the inventory vars)."""
    if cred.known_hosts is None:
        return "-o ConnectTimeout=5 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    return f"-o ConnectTimeout=5 -o StrictHostKeyChecking=yes -o UserKnownHostsFile={shlex.quote(cred.known_hosts)}"


def netmiko_params(cred: Credentials, ep: SwitchEndpoint, *, timeout: float) -> dict[str, Any]:
    """ConnectHandler keywords: host key verified against known_hosts unless it is None."""
    params: dict[str, Any] = dict(
        device_type=ep.device_type, host=ep.address, port=cred.port, username=cred.username or "",
        use_keys=bool(cred.key_file or cred.use_agent), allow_agent=cred.use_agent,
        conn_timeout=timeout, auth_timeout=timeout, banner_timeout=timeout, fast_cli=True,
    )
    if cred.key_file:
        params["key_file"] = cred.key_file
    if cred.password is not None:
        params["password"] = cred.password.get_secret_value()
        if ep.device_type == "arista_eos":
            params["secret"] = params["password"]
    if cred.known_hosts:  # the host's keys from it (`known_client`: the file read once, not once per switch)
        params.update(ssh_strict=True, system_host_keys=False, alt_host_keys=False)
    else:
        params.update(ssh_strict=False, system_host_keys=False, alt_host_keys=False)
    return params


COMMAND = "command"  # SwitchEndpoint.device_type of a switch reached by a local command per shell line


class CommandConn:
    """A switch's shell reached by running one local command per line: `options["command"]` with the line appended,
    stdout the reply (stderr merged into it by that command, as a terminal shows it). What the drivers' shell
    helpers (fabric.targets.shell) use of a netmiko connection: `send_command` and `disconnect`."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv

    def send_command(self, command: str, *, read_timeout: float = 60, **_kw: Any) -> str:
        """The reply; a command that overran `read_timeout` is TimeoutError, an unreachable shell (exit 255)
        EOFError: both a lost session (fabric.targets.session.conn_errors)."""
        try:
            p = subprocess.run([*self.argv, command], capture_output=True, text=True, timeout=read_timeout,
                               start_new_session=True)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"no reply in {read_timeout:.0f}s") from None
        if p.returncode == 255:
            raise EOFError(p.stderr.strip() or "the shell could not be reached")
        return p.stdout

    def disconnect(self) -> None:
        """Nothing stays open between commands."""


_NETMIKO = threading.Lock()


def load_netmiko() -> None:
    """Import netmiko (every vendor's driver, paramiko, cryptography: ~400 modules that all stay) once, with the
    cyclic collector paused, and without `invoke`: paramiko.config imports it (asyncio, unittest.mock, a vendored
    PyYAML: about 0.08 CPU-s of every process that reaches a switch) for `Match exec` in an ssh_config file alone,
    which paramiko reads only where netmiko is given `ssh_config_file` (netmiko_params never gives it). paramiko
    handles the ImportError itself (`invoke = None`); `import invoke` works again afterwards."""
    with _NETMIKO:
        if "netmiko" in sys.modules:
            return
        blocked = "invoke" not in sys.modules
        with gc_paused():
            if blocked:
                sys.modules["invoke"] = None  # type: ignore[assignment]  # import invoke: ImportError
            try:
                import netmiko  # noqa: F401
            finally:
                if blocked and "invoke" in sys.modules and sys.modules["invoke"] is None:
                    del sys.modules["invoke"]


def connect(ep: SwitchEndpoint, cred: Credentials, *, timeout: float = 10) -> Any:
    """An open netmiko connection to a switch. paramiko's transport thread logs a traceback when the peer
    closes before the SSH banner (or any other transport failure); the caller reports the failure itself
    (one line per device), so paramiko's log gets a handler that drops it instead of Python's last-resort
    printing to stderr. An endpoint of device type `command` gets a CommandConn instead."""
    if ep.device_type == COMMAND:
        return CommandConn(ep.options["command"])
    load_netmiko()
    from netmiko import ConnectHandler

    paramiko_log = logging.getLogger("paramiko")
    if not paramiko_log.handlers:
        paramiko_log.addHandler(logging.NullHandler())

    conn = ConnectHandler(**netmiko_params(cred, ep, timeout=timeout), auto_connect=False)
    if cred.known_hosts:
        conn._get_ssh_client_instance = lambda: known_client(cred.known_hosts, ep.address, cred.port)
    where = f"{ep.address}:{cred.port}"
    _timeouts_named(conn, where, cred.reply_timeout)
    try:
        conn._open()
    except Exception as exc:
        raise _session_failed(exc, where, timeout) or exc from None
    _closed_session_raises(conn, where)
    _plain_text_kept(conn)
    return conn


def _plain_text_kept(conn: Any) -> None:
    """netmiko strips terminal escape sequences from every read (device types that set `ansi_escape_codes`: the
    Linux shells) with a regex pass for each sequence it knows, and each of them begins with ESC: a read without
    an ESC, as a CONFIG_DB of a hundred kilobytes is, comes back as it was, without those 35 passes."""
    strip = conn.strip_ansi_escape_codes
    conn.strip_ansi_escape_codes = lambda text: strip(text) if "\x1b" in text else text


NO_REPLY = "no reply from "  # how a read timeout's one line begins (`_timeouts_named`)


class SessionFailed(OSError):
    """A switch's SSH session failed, in one line: what happened, the address, the timeout (netmiko's own messages
    are paragraphs of advice). An OSError: a lost or refused session to every caller (`conn_errors`)."""


def _session_failed(exc: Exception, where: str, timeout: float) -> SessionFailed | None:
    """netmiko's failure to open a session as a SessionFailed; None: not one of netmiko's (raised as it is).
    netmiko raises its own while handling the socket's or paramiko's error, which says what happened."""
    from netmiko.exceptions import NetmikoAuthenticationException, NetmikoTimeoutException

    context = exc.__context__
    context = next(iter((getattr(context, "errors", None) or {None: context}).values()))  # paramiko's, by address
    said = context.strerror if isinstance(context, OSError) and context.strerror else context  # no `[Errno 111]`
    cause = " ".join(str(said or "").split()).rstrip(".")
    if isinstance(exc, NetmikoAuthenticationException):
        return SessionFailed(f"{where} refused the SSH login ({cause or 'authentication failed'})")
    if isinstance(exc, NetmikoTimeoutException) and isinstance(exc.__context__, OSError):
        return SessionFailed(f"TCP connection to {where} failed within {timeout:g} s ({cause or 'timed out'})")
    if isinstance(exc, NetmikoTimeoutException):
        return SessionFailed(f"no SSH session with {where} within {timeout:g} s ({cause or 'no reason given'})")
    return None


def _timeouts_named(conn: Any, where: str, longest: float | None = None) -> None:
    """A reply that does not come within its read timeout (netmiko's `send_command`, and its `read_until_pattern`,
    which its login and the drivers' waits use; both wait 10 s unless told; at most `longest`) raises netmiko's
    ReadTimeout saying so in one line."""
    from netmiko.exceptions import ReadTimeout

    def named(read: Callable[..., str]) -> Callable[..., str]:
        def reading(*args: Any, read_timeout: float = 10.0, **kwargs: Any) -> str:
            if longest is not None:
                read_timeout = min(read_timeout, longest)
            try:
                return read(*args, read_timeout=read_timeout, **kwargs)
            except ReadTimeout:
                raise ReadTimeout(f"{NO_REPLY}{where} within {read_timeout:g} s (the session stopped answering)"
                                  ) from None
        return reading

    conn.send_command = named(conn.send_command)
    conn.read_until_pattern = named(conn.read_until_pattern)


_KNOWN: dict[tuple[str, int, int], Any] = {}  # known_hosts path, mtime, size → its KnownHosts
_KNOWN_LOCK = threading.Lock()


class KnownHosts:
    """A known_hosts file read once, each plain host name's keys found by a dict: the key of each type from the first
    line that names the host, as paramiko's `HostKeys.lookup` gives it. paramiko's own reading looks each line's
    names up among the lines before (and each lookup scans every line): quadratic, 2–3 CPU-s for 1,792 switches.
    A file with hashed names (`|1|…`, OpenSSH's HashKnownHosts) is read and looked up by paramiko itself."""

    def __init__(self, path: str) -> None:
        import paramiko

        self.hashed: Any = None
        self.keys: dict[str, dict[str, Any]] = {}
        with open(path) as f:
            entries = [e for n, line in enumerate(f, 1) if line.strip() and not line.lstrip().startswith("#")
                       for e in [_entry(line.strip(), n)] if e is not None]
        if any(h.startswith("|1|") for e in entries for h in e.hostnames):
            self.hashed = paramiko.HostKeys(path)
            return
        for e in entries:
            for name in e.hostnames:
                self.keys.setdefault(name, {}).setdefault(e.key.get_name(), e.key)

    def lookup(self, name: str) -> dict[str, Any]:
        if self.hashed is not None:
            return dict(self.hashed.lookup(name) or {})
        return self.keys.get(name, {})


def _entry(line: str, lineno: int) -> Any:
    """One known_hosts line as paramiko reads it (a line it cannot read: None, skipped as paramiko skips it)."""
    import paramiko

    try:
        return paramiko.hostkeys.HostKeyEntry.from_line(line, lineno)
    except paramiko.SSHException:
        return None


def known_client(known_hosts: str, host: str, port: int) -> Any:
    """A paramiko SSHClient that knows the keys `known_hosts` lists for `host` (as `[host]:port` off port 22, as
    paramiko looks them up) and no other. netmiko's own `alt_key_file` parses the whole file for every
    connection: 0.1–0.2 CPU-s for each of 1,792 switches with a known_hosts of 1,792 lines, a plan's largest cost."""
    import paramiko

    st = os.stat(known_hosts)
    with _KNOWN_LOCK:
        keys = _KNOWN.get((known_hosts, st.st_mtime_ns, st.st_size))
        if keys is None:
            keys = KnownHosts(known_hosts)
            _KNOWN.clear()
            _KNOWN[(known_hosts, st.st_mtime_ns, st.st_size)] = keys
    client = paramiko.SSHClient()
    name = host if port == 22 else f"[{host}]:{port}"
    for keytype, key in keys.lookup(name).items():
        client.get_host_keys().add(name, keytype, key)
    return client


def _closed_session_raises(conn: Any, where: str) -> None:
    """netmiko reads the channel only while paramiko says data is ready, which a closed channel never says: a
    session that died while the tool waited for a reply was noticed only at that command's read timeout (60 s).
    Reading a channel that is closed or at its end, with nothing left in it, raises EOFError at once (one of
    `fabric.targets.session.conn_errors`: a lost connection, as before)."""
    channel = conn.channel
    remote, read = channel.remote_conn, channel.read_buffer

    def read_buffer() -> str:
        out = read()
        if not out and (remote.closed or remote.eof_received) and not remote.recv_ready():
            raise EOFError(f"{where} closed the SSH session")
        return out

    channel.read_buffer = read_buffer


def device_type(target: str) -> str:
    """netmiko device type of the NOS; `linux` where this netmiko lacks the NOS's own type (community
    SONiC has none: bash `config …`)."""
    load_netmiko()
    from netmiko.ssh_dispatcher import CLASS_MAPPER

    wanted = NOS[target].device_type
    return wanted if wanted in CLASS_MAPPER else "linux"


class Site(ABC):
    """Where the devices of one fabric are and how to reach them."""

    kind: ClassVar[Literal["ssh", "lab"]]
    fabric: FabricIntent  # the intent as this site realizes it
    rdma: bool = True  # hosts have RDMA NICs (perftest); False: TCP/ICMP stand-ins (iperf3, ping)
    line_gbps: float = 1.0  # without RDMA (the lab): the rate the switch ports are shaped to, for the thresholds
    soft_roce: bool = False  # a lab whose hosts have Soft-RoCE devices: ib_write_bw measures its rails
    agent: str = "fabric"  # the fabric executable on the hosts
    python: str | None = None  # the hosts' Python for Ansible (None: discovered)

    @property
    def name(self) -> str:
        return self.fabric.name

    # -- switches ------------------------------------------------------------------------------------
    @abstractmethod
    def switch(self, name: str) -> SwitchEndpoint: ...

    @abstractmethod
    def switch_credentials(self) -> Credentials: ...

    # -- hosts ---------------------------------------------------------------------------------------
    @abstractmethod
    def host_argv(self, host: str, argv: list[str]) -> list[str]:
        """argv (run on this machine) that runs `argv` on `host`."""

    @abstractmethod
    def host_credentials(self) -> Credentials: ...

    def host_address(self, host: str) -> str:
        return self.fabric.hosts[host].management_address.split("/")[0]


class InventorySite(Site):
    """The real fabric: switches and hosts at their management addresses, the inventory's access settings."""

    kind = "ssh"

    def __init__(self, fabric: FabricIntent, access: Access):
        self.fabric, self.access = fabric, access
        self.memo = Memo()  # what the switches' renders share

    def switch(self, name: str) -> SwitchEndpoint:
        sw = self.fabric.switches[name]
        # what a push applies: no review copies (nv-set.txt)
        files = render_switch(sw, self.fabric, extras=False, memo=self.memo)
        intended = NOS[sw.target].intended
        return SwitchEndpoint(device=name, target=sw.target, address=sw.management.split("/")[0],
                              device_type=device_type(sw.target), intended=files[intended],
                              options={"files": {n: t for n, t in files.items() if n != intended}})

    @cached_property
    def _switch_cred(self) -> Credentials:
        return inventory_credentials(self.access, need_secret=True)

    def switch_credentials(self) -> Credentials:
        return self._switch_cred

    @cached_property
    def _host_cred(self) -> Credentials:
        return inventory_credentials(self.access, need_secret=False)

    def host_credentials(self) -> Credentials:
        return self._host_cred

    def host_argv(self, host: str, argv: list[str]) -> list[str]:
        return ssh_argv(self.host_credentials(), self.host_address(host), argv)
