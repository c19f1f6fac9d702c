"""Addresses a command is given: the viewer's, which should stay on this machine unless asked, and
a Dask scheduler's, which must answer before any work starts."""
from __future__ import annotations

import ipaddress
import logging
import socket

from granular.errors import GranularError

log = logging.getLogger("granular")

#: How long a --scheduler has to answer (s): long enough for a far machine, short of a hang.
SCHEDULER_TIMEOUT = 10


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine alone (127.0.0.0/8, ::1, or a name that resolves there)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return False


def warn_if_exposed(host: str, port: int):
    if not is_loopback(host):
        log.warning("the viewer listens on %s:%d, so anyone who can reach this machine on that network can open it "
                    "and drive the simulation (it asks for no password); leave out --host to serve this machine only",
                    host, port)


def check_scheduler(address: str, timeout: float = SCHEDULER_TIMEOUT):
    """Refuse, before the bed is prepared (minutes of YADE), a --scheduler where no Dask scheduler answers."""
    from distributed import Client

    try:
        client = Client(address, timeout=timeout)
    except Exception as exc:  # OSError for no answer, ValueError/TypeError for a malformed address
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise GranularError(f"--scheduler {address}: no Dask scheduler answered within {timeout:g} s ({reason}); "
                            "start one there (`dask scheduler`, then `dask worker ADDRESS` on each machine) or "
                            "leave out --scheduler for a cluster on this machine") from None
    client.close()
