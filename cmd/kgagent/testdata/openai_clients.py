"""Real OpenAI-API clients against kgagent's /v1, for
TestOpenAIPythonClients: the `openai` SDK and `langchain-openai` (PyPI).

    python openai_clients.py BASE_URL API_KEY

BASE_URL is serve's base URL (without /v1). Every call is wrapped so that
one failure is reported, not fatal; the script prints one JSON object and
the Go test judges it.
"""

import json
import sys
import traceback

import openai
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

QUESTION = "What is the default HTTP port of the Lumen server?"


class Source(BaseModel):
    url: str
    title: str


class DocAnswer(BaseModel):
    """A documentation answer and the pages it cites."""

    answer: str
    sources: list[Source]


def attempt(report, key, fn):
    try:
        report[key] = fn()
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        report[key] = {"error": type(e).__name__, "status": e.status_code, "code": e.code, "param": e.param,
                       "type": body.get("type"), "message": body.get("message", str(e))}
    except Exception as e:  # noqa: BLE001 - reported, judged by the Go test
        report[key] = {"error": type(e).__name__, "message": str(e), "trace": traceback.format_exc()[-1500:]}


def main():
    base, key = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=120)
    messages = [{"role": "user", "content": QUESTION}]
    report = {"versions": {"openai": openai.__version__}}

    attempt(report, "models", lambda: [m.id for m in client.models.list()])
    attempt(report, "retrieve", lambda: client.models.retrieve("kgagent").id)

    def plain():
        r = client.chat.completions.create(model="kgagent", messages=messages)
        c = r.choices[0]
        return {"content": c.message.content, "finish": c.finish_reason, "usage": r.usage.total_tokens,
                "sources": len((r.model_extra or {}).get("sources", []))}

    attempt(report, "plain", plain)

    def stream(include_usage):
        kw = {"stream_options": {"include_usage": True}} if include_usage else {}
        content, finish, usage, chunks, empty = "", None, None, 0, 0
        for ch in client.chat.completions.create(model="kgagent", messages=messages, stream=True, **kw):
            chunks += 1
            if ch.usage is not None:
                usage = ch.usage.total_tokens
            if not ch.choices:
                empty += 1
                continue
            content += ch.choices[0].delta.content or ""
            finish = ch.choices[0].finish_reason or finish
        return {"content": content, "finish": finish, "usage": usage, "chunks": chunks, "usage_chunks": empty}

    attempt(report, "stream", lambda: stream(False))
    attempt(report, "stream_usage", lambda: stream(True))
    attempt(report, "tools", lambda: client.chat.completions.create(
        model="kgagent", messages=messages,
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]).model_dump())

    llm = ChatOpenAI(model="kgagent", base_url=base + "/v1", api_key=key, max_retries=0, timeout=120)
    attempt(report, "lc_invoke", lambda: llm.invoke(QUESTION).content)
    attempt(report, "lc_stream", lambda: "".join(str(c.content) for c in llm.stream(QUESTION)))
    attempt(report, "lc_structured", lambda: llm.with_structured_output(DocAnswer, method="json_schema").invoke(QUESTION).model_dump())
    attempt(report, "lc_json_mode", lambda: llm.with_structured_output(DocAnswer, method="json_mode").invoke(QUESTION + " Answer in JSON.").model_dump())
    attempt(report, "lc_function_calling", lambda: repr(llm.with_structured_output(DocAnswer, method="function_calling").invoke(QUESTION)))
    print(json.dumps(report))


main()
