"""A session with one switch: an open netmiko connection with its NOS driver (push and acceptance)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator

from fabric.access import NO_REPLY, Credentials, SessionFailed, SwitchEndpoint, connect, load_netmiko
from fabric.targets import driver
from fabric.targets.base import Driver


def conn_errors() -> tuple[type[BaseException], ...]:
    """What a lost or refused SSH session raises (netmiko, paramiko, sockets)."""
    load_netmiko()
    import paramiko
    from netmiko.exceptions import NetmikoAuthenticationException, NetmikoTimeoutException, ReadTimeout

    return (NetmikoTimeoutException, NetmikoAuthenticationException, ReadTimeout, paramiko.SSHException,
            OSError, EOFError, socket.timeout)


def open_driver(ep: SwitchEndpoint, cred: Credentials, *, timeout: float = 10,
                progress: Callable[[str], None] = lambda _s: None) -> Driver:
    """Connect and wrap the connection in the NOS driver (`driver.conn`); close it with `close`."""
    conn = connect(ep, cred, timeout=timeout)
    return driver(ep.target, conn, ep.device, ep.intended, progress=progress, options=ep.options)


def close(drv: Driver | None) -> None:
    if drv is not None:
        with contextlib.suppress(Exception):  # best effort on a possibly dead connection
            drv.conn.disconnect()


@contextlib.contextmanager
def session(ep: SwitchEndpoint, cred: Credentials, *, timeout: float = 10) -> Iterator[Driver]:
    drv = open_driver(ep, cred, timeout=timeout)
    try:
        yield drv
    finally:
        close(drv)


def reason(exc: BaseException) -> str:
    """Why a switch could not be reached, in one short line: the access layer's own (`SessionFailed`, a reply that
    did not come, a closed session) as it is, anything else after its type."""
    text = " ".join(str(exc).split())
    if isinstance(exc, SessionFailed | EOFError) or text.startswith(NO_REPLY):
        return text[:240]
    return f"{type(exc).__name__}: {text}"[:240] if text else type(exc).__name__
