"""Lock markers as premath writes them, for a process a test chose (dead, alive, a zombie)."""

from premath.store.markers import marker_text
from premath.store.owners import process_start_time, this_process

REFERENCE_MARKER = "pid={pid}\nutc=2026-03-01T10:00:00Z\n"
"""The reference's marker: no host or namespace, so premath can never judge it."""


def marker_of(pid: int) -> str:
    """The marker `pid` would have written on this host, boot and PID namespace."""
    owner = this_process()._replace(pid=pid, start=process_start_time(pid) or "-")
    return marker_text(owner, "2026-03-01T10:00:00Z")
