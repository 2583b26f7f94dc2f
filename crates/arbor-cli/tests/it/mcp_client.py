"""A client of `arbor mcp` through the official MCP Python SDK (PyPI `mcp`).

Usage: python mcp_client.py CONFIG_JSON

CONFIG_JSON: {"stdio": {"command": ..., "args": [...], "env": {...}}} or
{"http": {"url": ..., "headers": {...}}}, and "calls": [{"tool": NAME,
"args": {...}}, ...]. It connects, lists the tools, resources, resource
templates and prompts, makes the calls in order and prints one JSON object
on stdout: {"tools": [...], "resources": [...], "templates": [...],
"prompts": [...], "calls": [{"isError": bool, "text": str}, ...],
"resource": text of the first resource}.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


async def drive(session, config):
    await session.initialize()
    tools = await session.list_tools()
    resources = await session.list_resources()
    templates = await session.list_resource_templates()
    prompts = await session.list_prompts()
    out = {
        "tools": [{"name": t.name, "inputSchema": t.inputSchema, "annotations": t.annotations.model_dump()
                   if t.annotations else None} for t in tools.tools],
        "resources": [{"uri": str(r.uri), "name": r.name} for r in resources.resources],
        "templates": [t.uriTemplate for t in templates.resourceTemplates],
        "prompts": [p.name for p in prompts.prompts],
        "calls": [],
    }
    if resources.resources:
        read = await session.read_resource(resources.resources[0].uri)
        out["resource"] = read.contents[0].text
    for call in config.get("calls", []):
        result = await session.call_tool(call["tool"], call.get("args", {}))
        text = "".join(c.text for c in result.content if c.type == "text")
        out["calls"].append({"isError": bool(result.isError), "text": text})
    return out


async def main():
    config = json.loads(sys.argv[1])
    if "stdio" in config:
        s = config["stdio"]
        params = StdioServerParameters(command=s["command"], args=s.get("args", []), env=s.get("env"))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await drive(session, config)
    else:
        h = config["http"]
        async with streamablehttp_client(h["url"], headers=h.get("headers")) as (read, write, _):
            async with ClientSession(read, write) as session:
                out = await drive(session, config)
    json.dump(out, sys.stdout)


asyncio.run(main())
