"""premath's one HTTP stack (server.py: binds, guard, runner; app.py: the layers of an app;
auth.py: tokens and browser login) and the observation face on it (observation.py), built on
Starlette and uvicorn. Only this package and premath/mcp import the ASGI stack."""

from __future__ import annotations
