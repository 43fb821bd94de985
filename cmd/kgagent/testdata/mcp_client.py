"""A real MCP client of another implementation (the Python `mcp` package)
against kgagent, for TestMCPPythonClient.

    python mcp_client.py stdio KGAGENT_BINARY ARG...   # launches `KGAGENT_BINARY ARG...`
    python mcp_client.py http URL [API_KEY]            # Streamable HTTP

It lists the tools, calls search and ask (with a progress callback), reads
the first cited section as a resource, sends one bad call, and prints one
JSON object with what it saw; the Go test judges it.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result):
    return "".join(getattr(c, "text", "") or "" for c in result.content)


async def exercise(read, write):
    report = {"progress": []}
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        report["server"] = init.server_info.name
        report["protocol"] = init.protocol_version
        tools = await session.list_tools()
        report["tools"] = sorted(t.name for t in tools.tools)
        report["schemas"] = {t.name: t.input_schema for t in tools.tools}

        search = await session.call_tool("search", {"query": "default HTTP port of the Lumen server", "k": 3})
        report["search_error"] = search.is_error
        report["search_hits"] = (search.structured_content or {}).get("hits", [])

        async def on_progress(progress, total, message):
            report["progress"].append({"progress": progress, "message": message})

        ask = await session.call_tool(
            "ask", {"question": "What is the default HTTP port of the Lumen server?"}, progress_callback=on_progress
        )
        report["ask_error"] = ask.is_error
        report["answer"] = (ask.structured_content or {}).get("answer", "")
        links = [c.uri for c in ask.content if getattr(c, "type", "") == "resource_link"]
        report["links"] = [str(u) for u in links]
        if links:
            read_result = await session.read_resource(links[0])
            report["resource_text"] = "".join(getattr(c, "text", "") or "" for c in read_result.contents)

        bad = await session.call_tool("search", {"query": "x", "k": "many"})
        report["bad_error"] = bad.is_error
        report["bad_text"] = text_of(bad)
        # The session lives on after a bad call.
        again = await session.call_tool("collections", {})
        report["after_bad"] = [c["name"] for c in (again.structured_content or {}).get("collections", [])]
    return report


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as (read, write):
            report = await exercise(read, write)
    elif mode == "http":
        headers = {"Authorization": "Bearer " + sys.argv[3]} if len(sys.argv) > 3 else None
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(sys.argv[2], http_client=client) as (read, write):
                report = await exercise(read, write)
    else:
        raise SystemExit("usage: mcp_client.py stdio BINARY ARG... | http URL [API_KEY]")
    print(json.dumps(report))


asyncio.run(main())
