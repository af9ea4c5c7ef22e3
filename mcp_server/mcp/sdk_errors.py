"""The MCP SDK's tool exceptions (`mcp.server.mcpserver.exceptions`: ToolError, UnexpectedToolError, ...)
without importing the SDK (issue 47, cold start).

Any `mcp.*` import runs `mcp/__init__`, which imports the SDK's client, server, starlette and httpx (about
0.45 s of CPU): too much for a stdio session's first answer, which the front (`front.py`) computes before
the SDK is imported. The tools raise `CodedToolError`, which must be the SDK's own `ToolError` (the SDK
passes a ToolError's message to the client and hides any other exception's), so this module loads the
SDK's `exceptions.py` file alone (it imports nothing) under its own module name: when the SDK is imported
later, its `from .exceptions import ToolError` finds this module in `sys.modules`, and the classes are the
same objects either way (tests/mcp_server/test_cold_front.py checks it)."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["exceptions", "bind", "ToolError", "UnexpectedToolError", "ResourceError", "ResourceNotFoundError"]

_NAME = "mcp.server.mcpserver.exceptions"


def exceptions() -> ModuleType:
    """The SDK's exceptions module: the one in `sys.modules`, or its file loaded alone."""
    mod = sys.modules.get(_NAME)
    if mod is not None:
        return mod
    top = importlib.util.find_spec("mcp")  # a top-level spec: finds the package without running it
    if top is None or not top.submodule_search_locations:
        raise ImportError("the MCP SDK (package `mcp`) is not installed")
    path = os.path.join(list(top.submodule_search_locations)[0], "server", "mcpserver", "exceptions.py")
    spec = importlib.util.spec_from_file_location(_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[_NAME]
        raise
    return mod


def bind() -> None:
    """Once the SDK is imported: make the module an attribute of its package too, as an import would."""
    pkg = sys.modules.get("mcp.server.mcpserver")
    if pkg is not None and getattr(pkg, "exceptions", None) is not sys.modules.get(_NAME):
        pkg.exceptions = sys.modules[_NAME]  # type: ignore[attr-defined]


if TYPE_CHECKING:
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError, UnexpectedToolError
else:
    _mod = exceptions()
    ToolError = _mod.ToolError
    UnexpectedToolError = _mod.UnexpectedToolError
    ResourceError = _mod.ResourceError
    ResourceNotFoundError = _mod.ResourceNotFoundError
