"""gql (PyPI), a GraphQL client that fetches the schema by introspection
before it sends anything, against kgagent's /graphql, for TestGQLClient.

    python gql_client.py BASE_URL API_KEY

It fetches the schema (fetch_schema_from_transport=True), runs a query
over POST and over GET (plain requests), has a mutation checked against the fetched schema,
and lets the fetched schema refuse a bad query locally; it prints one JSON
object and the Go test judges it.
"""

import json
import sys

import requests
from gql import Client, gql
from gql.transport.requests import RequestsHTTPTransport


def main():
    base, key = sys.argv[1], sys.argv[2]
    headers = {"Authorization": "Bearer " + key}
    report = {}
    client = Client(transport=RequestsHTTPTransport(url=base + "/graphql", headers=headers, timeout=60),
                    fetch_schema_from_transport=True)
    with client as session:
        report["types"] = sorted(n for n in client.schema.type_map if not n.startswith("__"))
        report["mutations"] = sorted(client.schema.mutation_type.fields) if client.schema.mutation_type else []
        report["agents"] = session.execute(gql("{ agents { name } }"))["agents"]
        created = session.execute(gql('mutation($t: String) { createSession(title: $t) { id title } }'),
                                  variable_values={"t": "gql"})
        report["session_title"] = created["createSession"]["title"]
        try:
            session.execute(gql("{ agents { nothing } }"))
            report["bad_query"] = "accepted"
        except Exception as e:  # noqa: BLE001 - the fetched schema refuses it before sending
            report["bad_query"] = type(e).__name__ + ": " + str(e)
    # GraphQL-over-HTTP GET (gql's transports always send a body, so plain
    # requests, as a browser or a CDN-cached client would).
    got = requests.get(base + "/graphql", params={"query": "{ sessions { title } }"}, headers=headers, timeout=60)
    report["get_status"] = got.status_code
    report["get_sessions"] = [s["title"] for s in got.json()["data"]["sessions"]]
    print(json.dumps(report))


main()
