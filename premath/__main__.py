from __future__ import annotations

from premath.cli import main

main()
