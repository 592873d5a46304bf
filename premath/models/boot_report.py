"""`premath.harness.boot.v1`: what `premath harness boot` found before any work starts."""

from __future__ import annotations

from typing import Literal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

BOOT_KIND: Final = "premath.harness.boot.v1"
BOOT_SCHEMA: Final = 1

BootFailureClass = Literal[
    "boot.issues_missing",
    "boot.issues_invalid",
    "boot.dependency_cycle",
    "boot.session_invalid",
    "boot.ledger_invalid",
    "boot.startup_verification_failed",
]
