"""`cargo xtask bench --mcp`'s client: the MCP Python SDK timing `arbor mcp`.

Usage: python bench_mcp.py CONFIG_JSON, where CONFIG_JSON is {"stdio":
{"command", "args", "env"}, "runs": N, "calls": [{"name", "tool", "args"}]}.
For each call: the first answer's time (cold: the index and the catalog
made), then N more (warm); prints {"name": {"cold_ms", "warm_ms": [...],
"chars", "isError"}} as JSON.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    config = json.loads(sys.argv[1])
    s = config["stdio"]
    params = StdioServerParameters(command=s["command"], args=s["args"], env=s.get("env"))
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for call in config["calls"]:
                times = []
                for _ in range(config["runs"] + 1):
                    start = time.perf_counter()
                    result = await session.call_tool(call["tool"], call["args"])
                    times.append((time.perf_counter() - start) * 1000.0)
                text = "".join(c.text for c in result.content if c.type == "text")
                out[call["name"]] = {"cold_ms": times[0], "warm_ms": times[1:], "chars": len(text),
                                     "isError": bool(result.isError), "head": text[:200]}
    json.dump(out, sys.stdout)


asyncio.run(main())
