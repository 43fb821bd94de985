"""nats-py against a running `kgagent serve` (TestNATSPythonClient).

Usage: nats_client.py <nats url with the client credential>

Asks on the single-reply subject with nc.request(), reads the streamed
frames of kgagent.request.agent from an inbox until "complete": true, and
subscribes to ">" and joins queue group kgagent on kgagent.request.*, which
the server must refuse. Prints one JSON report on stdout.
"""
import asyncio
import json
import sys

import nats

QUESTION = "What is the default HTTP port of Lumen?"


async def main(url):
    errors = []

    async def on_error(e):
        errors.append(str(e))

    report = {}
    nc = await nats.connect(url, error_cb=on_error, max_reconnect_attempts=0)
    try:
        # Request/reply on the single-reply subject: one message, the answer.
        msg = await nc.request("kgagent.ask.agent", json.dumps({"question": QUESTION}).encode(), timeout=60)
        report["single"] = json.loads(msg.data)

        # The streamed subject: every frame to the inbox, the last complete.
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.publish("kgagent.request.agent", json.dumps({"question": QUESTION}).encode(), reply=inbox)
        frames = []
        while True:
            m = await sub.next_msg(timeout=60)
            f = json.loads(m.data)
            frames.append(f)
            if f.get("complete"):
                break
        await sub.unsubscribe()
        report["frames"] = frames

        # What the client credential may not do.
        await nc.subscribe(">")
        await nc.subscribe("kgagent.request.*", queue="kgagent")
        await nc.flush()
        for _ in range(50):
            if sum("permissions violation" in e.lower() for e in errors) >= 2:
                break
            await asyncio.sleep(0.1)
        report["errors"] = errors
    finally:
        await nc.close()
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
