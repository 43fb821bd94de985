"""fastmcp (PyPI), a second independent MCP client, against kgagent, for
TestFastMCPClient.

    python fastmcp_client.py stdio INGEST_URL KGAGENT_BINARY ARG...  # launches `KGAGENT_BINARY ARG...`
    python fastmcp_client.py http INGEST_URL URL API_KEY             # Streamable HTTP

INGEST_URL is what the ingest tool is asked to crawl.

It lists the tools and the resources, calls every tool, reads the section
that ask cites, and prints one JSON object; the Go test judges it.
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

QUESTION = "What is the default HTTP port of the Lumen server?"


def text_of(result):
    return "".join(getattr(c, "text", "") or "" for c in result.content)


async def exercise(client, ingest_url):
    report = {"calls": {}}
    async with client:
        init = client.initialize_result
        report["protocol"] = getattr(init, "protocol_version", None) if init else None
        report["tools"] = sorted(t.name for t in await client.list_tools())
        resources = await client.list_resources()
        report["resources"] = [str(r.uri) for r in resources]

        async def call(name, args):
            r = await client.call_tool(name, args, raise_on_error=False)
            report["calls"][name] = {"error": r.is_error, "text": text_of(r)[:2000], "structured": r.structured_content}
            return r

        await call("collections", {})
        await call("search", {"query": "default HTTP port", "k": 3})
        await call("graph", {"entity": "lumen backup", "limit": 5})
        ask = await call("ask", {"question": QUESTION})
        links = [str(c.uri) for c in ask.content if getattr(c, "type", "") == "resource_link"]
        report["links"] = links
        if links:
            contents = await client.read_resource(links[0])
            report["cited_text"] = "".join(getattr(c, "text", "") or "" for c in contents)
        job = await call("ingest", {"urls": [ingest_url], "collection": "scratch", "max_pages": 1})
        job_id = (job.structured_content or {}).get("job_id") or "no-such-job"
        await call("ingest_status", {"job_id": job_id})
    return report


def main():
    mode, ingest_url = sys.argv[1], sys.argv[2]
    if mode == "stdio":
        transport = StdioTransport(command=sys.argv[3], args=sys.argv[4:])
    else:
        transport = StreamableHttpTransport(sys.argv[3], headers={"Authorization": "Bearer " + sys.argv[4]})
    report = asyncio.run(exercise(Client(transport, timeout=120), ingest_url))
    print(json.dumps(report, default=str))


main()
