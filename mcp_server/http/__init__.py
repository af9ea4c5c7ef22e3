"""The engine API over HTTP: FastAPI routes (`api`), auth, transaction sessions, the ASGI fast
paths and the uvicorn runner (`server`)."""
