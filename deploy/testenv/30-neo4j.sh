# A real Neo4j Community server from Maven Central (deploy/neo4j), on loopback.
command -v java >/dev/null || { echo "java 17 is required for Neo4j" >&2; exit 1; }
command -v mvn >/dev/null || { echo "maven is required to resolve Neo4j" >&2; exit 1; }
NEO4J_DIR="$KGAGENT_TEST_OUT/neo4j"
rm -rf "$NEO4J_DIR"
on_exit "bash deploy/neo4j/stop.sh '$NEO4J_DIR'"
# Assigned first, so that a failed start stops the run here (set -e).
neo4j_env=$(bash deploy/neo4j/start.sh "$NEO4J_DIR")
eval "$neo4j_env"
export NEO4J_URL NEO4J_USER NEO4J_PASSWORD
export KGAGENT_REQUIRE_NEO4J=1
