# A three-node NATS JetStream cluster of real nats-server processes (built
# from the Go module proxy at go.mod's version, see deploy/natscluster), on
# loopback: the job queue's R3 test and the NATS fault tests use it, and
# KGAGENT_TEST_NATS_SERVER lets fault tests start (and kill) nodes of their own.
NATS_CLUSTER_DIR="$KGAGENT_TEST_OUT/natscluster"
on_exit "bash deploy/natscluster/stop.sh '$NATS_CLUSTER_DIR'"
# Assigned first, so that a failed start stops the run here (set -e).
natscluster_env=$(bash deploy/natscluster/start.sh "$NATS_CLUSTER_DIR")
eval "$natscluster_env"
export KGAGENT_TEST_NATS_CLUSTER="$NATS_CLUSTER_URLS"
export KGAGENT_TEST_NATS_SERVER="$NATS_SERVER"
export KGAGENT_REQUIRE_NATS_CLUSTER=1
