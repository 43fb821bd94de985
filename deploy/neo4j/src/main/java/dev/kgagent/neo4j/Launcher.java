package dev.kgagent.neo4j;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.configuration.ssl.ClientAuth;
import org.neo4j.configuration.ssl.SslPolicyConfig;
import org.neo4j.configuration.ssl.SslPolicyScope;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.driver.AuthToken;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Config;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Logging;
import org.neo4j.driver.Session;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * Starts Neo4j Community 5.26 (the org.neo4j:neo4j database with its Bolt
 * server) as one process for kgagent's tests and CI.
 *
 * <p>Usage: {@code Launcher --data DIR [--host 127.0.0.1] [--port 0]
 * [--password PW] [--pagecache 64m] [--tls-dir DIR] [--url-file FILE]
 * [--bolt-shutdown-wait 5s]}. Port 0 picks a free port. With --tls-dir (holding private.key and public.crt,
 * PEM) Bolt also accepts TLS on the same port. Without --password authentication is disabled (the server only
 * listens on loopback); with it, the user neo4j gets that password (at least 8
 * characters).
 *
 * <p>Once the database is up, the launcher connects to its own Bolt port with
 * the official Java driver and runs {@code RETURN 1}; only when that answers
 * does it write the bolt URL to --url-file and print {@code READY <url>}. It
 * runs until SIGTERM or SIGINT, then shuts the database down cleanly.
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = parse(args);
        String host = opt.getOrDefault("host", "127.0.0.1");
        int port = Integer.parseInt(opt.getOrDefault("port", "0"));
        String password = opt.get("password");
        String data = opt.get("data");
        if (data == null) {
            fail("--data DIR is required");
        }
        if (password != null && password.length() < 8) {
            fail("--password must be at least 8 characters");
        }
        long pagecache = parseBytes(opt.getOrDefault("pagecache", "64m"));

        String tlsDir = opt.get("tls-dir");
        DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(Path.of(data))
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
                .setConfig(BoltConnector.encryption_level, tlsDir == null
                        ? BoltConnector.EncryptionLevel.DISABLED : BoltConnector.EncryptionLevel.OPTIONAL)
                .setConfig(GraphDatabaseSettings.auth_enabled, password != null)
                .setConfig(GraphDatabaseSettings.pagecache_memory, pagecache)
                .setConfig(GraphDatabaseSettings.check_point_interval_time, java.time.Duration.ofMinutes(5));
        if (tlsDir != null) {
            // TLS on the same Bolt port, optional, so bolt:// and bolt+s://
            // both work: private.key and public.crt in tlsDir (PEM).
            Path base = Path.of(tlsDir).toAbsolutePath();
            Files.createDirectories(base.resolve("trusted"));
            Files.createDirectories(base.resolve("revoked"));
            SslPolicyConfig bolt = SslPolicyConfig.forScope(SslPolicyScope.BOLT);
            builder.setConfig(bolt.enabled, true)
                    .setConfig(bolt.base_directory, base)
                    .setConfig(bolt.private_key, base.resolve("private.key"))
                    .setConfig(bolt.public_certificate, base.resolve("public.crt"))
                    .setConfig(bolt.client_auth, ClientAuth.NONE);
        }
        String shutdownWait = opt.get("bolt-shutdown-wait");
        if (shutdownWait != null) {
            // How long shutdown waits for Bolt connections and their worker
            // threads (Neo4j's default: 5 s each, even with none open).
            java.time.Duration wait = java.time.Duration.parse("PT" + shutdownWait.toUpperCase());
            builder.setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, wait)
                    .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, wait);
        }
        DatabaseManagementService dbms = builder.build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("STOPPING");
            try {
                dbms.shutdown();
            } finally {
                System.out.println("STOPPED");
                stopped.countDown();
            }
        }, "neo4j-shutdown"));

        GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        if (password != null) {
            try {
                dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME).executeTransactionally(
                        "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
            } catch (org.neo4j.graphdb.QueryExecutionException e) {
                // A restart on kept data (NEO4J_KEEP_DATA=1): the password is set already.
                if (!String.valueOf(e.getMessage()).contains("cannot be the same")) {
                    throw e;
                }
            }
        }
        int boltPort = ((GraphDatabaseAPI) db).getDependencyResolver()
                .resolveDependency(ConnectorPortRegister.class)
                .getLocalAddress(ConnectorType.BOLT)
                .getPort();
        String url = "bolt://" + host + ":" + boltPort;

        // Prove that Bolt really answers a Cypher query before saying READY.
        AuthToken auth = password == null ? AuthTokens.none() : AuthTokens.basic("neo4j", password);
        Config cfg = Config.builder().withLogging(Logging.none()).withoutEncryption()
                .withConnectionTimeout(10, TimeUnit.SECONDS).build();
        try (Driver driver = GraphDatabase.driver(url, auth, cfg); Session s = driver.session()) {
            long one = s.run("RETURN 1 AS one").single().get("one").asLong();
            if (one != 1) {
                fail("self-check over Bolt returned " + one);
            }
        }

        String urlFile = opt.get("url-file");
        if (urlFile != null) {
            Path p = Path.of(urlFile);
            Path tmp = p.resolveSibling(p.getFileName() + ".tmp");
            Files.writeString(tmp, url + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, p, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        System.out.println("READY " + url);
        System.out.flush();
        stopped.await();
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || i + 1 >= args.length) {
                fail("bad argument " + a + "; usage: --data DIR [--host H] [--port P] [--password PW] [--pagecache 64m] [--tls-dir D] [--url-file F] [--bolt-shutdown-wait 5s]");
            }
            m.put(a.substring(2), args[++i]);
        }
        return m;
    }

    private static long parseBytes(String s) {
        s = s.trim().toLowerCase();
        char unit = s.charAt(s.length() - 1);
        long n = Character.isDigit(unit) ? Long.parseLong(s) : Long.parseLong(s.substring(0, s.length() - 1));
        switch (unit) {
            case 'k': return ByteUnit.kibiBytes(n);
            case 'm': return ByteUnit.mebiBytes(n);
            case 'g': return ByteUnit.gibiBytes(n);
            default: return n;
        }
    }

    private static void fail(String msg) {
        System.err.println("launcher: " + msg);
        System.exit(2);
    }
}
