"""``faildiag mcp``: the tools of ``tools`` served over the Model Context Protocol on stdio.

This module is the only one that touches the SDK (the optional ``mcp`` extra), and only inside functions,
so importing it without the SDK works. It lists the tools with their JSON schemas, passes each call to
``Toolbox.call`` in a worker thread (a diagnosis of a 1 GB log or a fix's verification rerun must not stall
the protocol), and turns a refusal into a tool error (``isError``) with its one-line reason. Resources:
``report.json`` and ``report.md`` of each snapshot in the latest output folder, and the agent skill.

stdout is the protocol's wire. Before serving, the wire is moved to private descriptors and fd 1 is pointed
at stderr (fd 0 at the null device): a stray ``print``, a warning, or the verification rerun of a fix can
then never write into the protocol stream. Both SDK generations are served: 1.x (``mcp>=1.10``: handlers
registered by decorators) and 2.x (handlers passed to the ``Server`` constructor).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
from collections.abc import Iterator
from typing import Any

from .roots import Roots
from .tools import SKILL_URI, TOOLS, Toolbox, ToolFailure

INSTRUCTIONS = (
    "faildiag diagnoses failed or hung runs. Call diagnose with the run's logs (paths inside the "
    "server's roots) to get report.json: ranked root causes with direct (observed) and hypothesis "
    "(inferred) evidence. fix_propose shows one fix; call fix_apply only after the user confirmed "
    "that exact proposal. Read the faildiag://skill resource for the full workflow."
)


def serve(roots: Roots) -> int:
    """Serve until the client closes stdin. The working folder becomes the first root."""
    import anyio

    os.chdir(roots.first)
    toolbox = Toolbox(roots)
    with _private_wire() as (wire_in, wire_out):
        anyio.run(_serve, toolbox, wire_in, wire_out)
    return 0


@contextlib.contextmanager
def _private_wire() -> Iterator[tuple[io.TextIOWrapper, io.TextIOWrapper]]:
    """The protocol's stdin and stdout on private descriptors; fd 0 reads the null device, fd 1 goes to stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace")
    writer = io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8")
    try:
        yield reader, writer
    finally:
        with contextlib.suppress(OSError, ValueError):
            writer.flush()


async def _serve(toolbox: Toolbox, wire_in: io.TextIOWrapper, wire_out: io.TextIOWrapper) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(toolbox)
    async with stdio_server(anyio.wrap_file(wire_in), anyio.wrap_file(wire_out)) as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest-faildiag")
    except Exception:  # not installed (a source checkout): the package's own number
        from .. import __version__

        return str(__version__)


# ------------------------------------------------------------------------------------- what is served


def tool_list() -> list[Any]:
    import mcp.types as types

    return [
        types.Tool(
            name=s.name,
            description=s.description,
            inputSchema=s.input_schema,
            outputSchema=s.output_schema,
            annotations=types.ToolAnnotations(readOnlyHint=s.read_only, destructiveHint=False, openWorldHint=False),
        )
        for s in TOOLS.values()
    ]


async def run_tool(toolbox: Toolbox, name: str, arguments: Any) -> tuple[dict[str, Any] | None, str]:
    """(structured result, its JSON text), or (None, the one-line reason) when the tool refused."""
    import anyio

    try:
        result = await anyio.to_thread.run_sync(toolbox.call, name, arguments)
    except ToolFailure as exc:
        return None, str(exc)
    return result, json.dumps(result, ensure_ascii=False, default=str)


def resource_list(toolbox: Toolbox) -> list[Any]:
    import mcp.types as types

    skill = types.Resource(
        uri=SKILL_URI,
        name="faildiag skill",
        mimeType="text/markdown",
        description="how to diagnose, read the evidence and fix with faildiag",
    )
    return [
        skill,
        *(
            types.Resource(uri=r["uri"], name=r["name"], mimeType=r["mime"], description=r["description"])
            for r in toolbox.snapshot_resources()
        ),
    ]


async def read(toolbox: Toolbox, uri: str) -> tuple[str, str]:
    import anyio

    try:
        return await anyio.to_thread.run_sync(toolbox.read_resource, uri)
    except ToolFailure as exc:
        raise ValueError(str(exc)) from None  # the SDK answers a JSON-RPC error with this message


def build_server(toolbox: Toolbox) -> Any:
    """The SDK's low-level server with the tools and resources; 2.x or 1.x, whichever is installed."""
    from mcp.server.lowlevel import Server

    if "on_call_tool" in inspect.signature(Server.__init__).parameters:
        return _server_v2(Server, toolbox)
    return _server_v1(Server, toolbox)


def _server_v2(server_class: Any, toolbox: Toolbox) -> Any:
    import mcp.types as types

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tool_list())

    async def call_tool(ctx: Any, params: Any) -> Any:
        result, text = await run_tool(toolbox, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structuredContent=result, isError=result is None
        )

    async def list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(resources=resource_list(toolbox))

    async def read_resource(ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        try:
            text, mime = await read(toolbox, str(params.uri))
        except ValueError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mimeType=mime, text=text)])

    return server_class(
        "faildiag",
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _server_v1(server_class: Any, toolbox: Toolbox) -> Any:
    import mcp.types as types
    from mcp.server.lowlevel.helper_types import ReadResourceContents

    server = server_class("faildiag", version=_version(), instructions=INSTRUCTIONS)

    @server.list_tools()
    async def list_tools() -> list[Any]:
        return tool_list()

    @server.call_tool(validate_input=False)  # the tools check their own arguments, with one-line reasons
    async def call_tool(name: str, arguments: Any) -> Any:
        result, text = await run_tool(toolbox, name, arguments)
        if result is None:
            raise ToolFailure(text)  # 1.x answers an exception with an isError result holding its text
        return [types.TextContent(type="text", text=text)], result

    @server.list_resources()
    async def list_resources() -> list[Any]:
        return resource_list(toolbox)

    @server.read_resource()
    async def read_resource(uri: Any) -> Any:
        text, mime = await read(toolbox, str(uri))
        return [ReadResourceContents(content=text, mime_type=mime)]

    return server
