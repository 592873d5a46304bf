"""HTTP faces: the uvicorn runner (server.py) and the observation API and dashboard
(observation.py), built on Starlette. Only this package and premath/mcp import the ASGI stack."""
