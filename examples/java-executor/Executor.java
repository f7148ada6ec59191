import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Sundial executor on JDK 17 alone: {@code com.sun.net.httpserver} for deliveries,
 * {@code java.net.http} for its calls to Sundial, {@code javax.crypto.Mac} for the signatures.
 *
 * <pre>
 *   javac -d out *.java
 *   SUNDIAL_SECRET=whsec_… SUNDIAL_APP_ID=app_… PORT=9000 java -cp out Executor
 * </pre>
 *
 * It verifies every delivery (several secrets during a rotation), refuses timestamps more than
 * five minutes off, acts once per {@code webhook-id}, runs the named handler and answers
 * {@code 200 {"status": "succeeded", "output": …}}. It registers with Sundial, heartbeats with the
 * runs in progress and deregisters on shutdown, answering {@code 503 executor_offline} while it
 * drains and {@code 410 handler_retired} for a handler it does not serve.
 */
public final class Executor {
    /** A handler: the run's {@code params} and the whole delivery body in, the run's output out. */
    @FunctionalInterface
    public interface Handler {
        Object run(Object params, Map<String, Object> delivery) throws Exception;
    }

    /** Throw to fail the run; {@code retry = false}: Sundial fails it at once, with no retry. */
    public static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        final boolean retry;

        public Failure(String message, boolean retry) {
            super(message);
            this.retry = retry;
        }
    }

    static final int MAX_BODY = 1 << 20;
    /** Answers are remembered this long per webhook-id (≥ the ±5-minute window, both sides). */
    static final long REMEMBER_NANOS = TimeUnit.MINUTES.toNanos(10);
    static final int REMEMBER_MAX = 100_000;

    private final List<byte[]> keys;
    private final String appId;
    private final List<String> sundialUrls;
    private final Map<String, Handler> handlers = new LinkedHashMap<>();
    private final HttpClient client = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build(); // no proxy: executor calls go straight to Sundial

    /** webhook-id → the first answer (a future while its handler runs), in expiry order. */
    private final LinkedHashMap<String, Remembered> answers = new LinkedHashMap<>();
    /** "run_id/shard/attempt" → the thread running it (interrupted by a cancel). */
    private final Map<String, Thread> running = new ConcurrentHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean draining;

    private HttpServer server;
    private ThreadPoolExecutor pool;
    private Thread heartbeats;
    private volatile String executorId;
    private volatile long heartbeatMs = 3000;

    private record Reply(int status, String body) {}

    private record Remembered(long expiresAt, CompletableFuture<Reply> answer) {}

    public Executor(String secrets, String appId, String sundialUrls) {
        this.keys = Signing.keys(secrets);
        this.appId = appId == null ? "" : appId.trim();
        this.sundialUrls = new ArrayList<>();
        for (String u : (sundialUrls == null ? "" : sundialUrls).split(",")) {
            if (!u.isBlank()) {
                this.sundialUrls.add(u.trim().replaceAll("/+$", ""));
            }
        }
    }

    public Executor handler(String name, Handler h) {
        handlers.put(name, h);
        return this;
    }

    static void log(String message) {
        System.out.println(Instant.now() + " " + message);
        System.out.flush();
    }

    // -- one delivery ------------------------------------------------------------------------

    private Reply handleDelivery(HttpExchange ex, byte[] body) {
        String id = ex.getRequestHeaders().getFirst("webhook-id");
        String why = Signing.verify(keys, id, ex.getRequestHeaders().getFirst("webhook-timestamp"),
                ex.getRequestHeaders().getFirst("webhook-signature"), body,
                Math.floorDiv(System.currentTimeMillis(), 1000L), Signing.TOLERANCE_SECS);
        if (why != null) {
            return error(401, "bad_signature", why);
        }
        CompletableFuture<Reply> mine = new CompletableFuture<>();
        CompletableFuture<Reply> first;
        synchronized (answers) {
            long now = System.nanoTime();
            Iterator<Remembered> it = answers.values().iterator();
            while (it.hasNext()) { // forget expired ids (oldest first) and keep the memory bounded
                Remembered r = it.next();
                if (r.expiresAt - now > 0 && answers.size() < REMEMBER_MAX) {
                    break;
                }
                it.remove();
            }
            Remembered seen = answers.get(id);
            if (seen != null) {
                first = seen.answer;
            } else if (draining) {
                return error(503, "executor_offline", "this executor is shutting down");
            } else {
                answers.put(id, new Remembered(now + REMEMBER_NANOS, mine));
                first = null;
            }
        }
        if (first != null) { // a repeat: the first answer, once it is there; the handler runs once
            log("repeat of " + id + ": answering as the first time");
            return first.join();
        }
        Reply reply;
        try {
            reply = runDelivery(body);
        } catch (RuntimeException | Error e) {
            reply = error(500, "executor_error", String.valueOf(e));
        }
        mine.complete(reply);
        return reply;
    }

    @SuppressWarnings("unchecked")
    private Reply runDelivery(byte[] body) {
        Map<String, Object> delivery;
        try {
            Object parsed = Json.parse(utf8(body));
            if (!(parsed instanceof Map)) {
                return error(400, "bad_delivery", "the body is not a JSON object");
            }
            delivery = (Map<String, Object>) parsed;
        } catch (CharacterCodingException | Json.ParseException e) {
            return error(400, "bad_delivery", "the body is not JSON: " + e.getMessage());
        }
        Object name = delivery.get("handler");
        Handler h = name instanceof String ? handlers.get(name) : null;
        if (h == null) {
            return error(410, "handler_retired", "no handler " + Json.write(name) + " here");
        }
        Object runId = delivery.get("run_id");
        Object attempt = delivery.get("attempt");
        Object shard = delivery.get("shard") instanceof Map ? ((Map<String, Object>) delivery.get("shard")).get("index") : 0;
        String key = runId + "/" + shard + "/" + attempt;
        log("run " + runId + " attempt " + attempt + ": " + name + "(" + Json.write(delivery.get("params")) + ")");
        running.put(key, Thread.currentThread());
        inFlight.incrementAndGet();
        Map<String, Object> answer = new LinkedHashMap<>();
        try {
            Object output = h.run(delivery.get("params"), delivery);
            String out = Json.write(output); // not JSON: the run fails, below
            return new Reply(200, "{\"status\":\"succeeded\",\"output\":" + out + "}");
        } catch (Failure e) {
            answer.put("status", "failed");
            answer.put("message", e.getMessage());
            if (!e.retry) {
                answer.put("retry", false);
            }
        } catch (Exception e) {
            log("run " + runId + " failed: " + e);
            answer.put("status", "failed");
            answer.put("message", e.getClass().getSimpleName() + ": " + e.getMessage());
        } finally {
            running.remove(key); // after this no cancel interrupts this thread (see handleCancel) …
            Thread.interrupted(); // … and one that came late must not reach the next delivery on it
            if (inFlight.decrementAndGet() == 0) {
                synchronized (inFlight) {
                    inFlight.notifyAll();
                }
            }
        }
        return new Reply(200, Json.write(answer));
    }

    @SuppressWarnings("unchecked")
    private Reply handleCancel(HttpExchange ex, byte[] body) {
        String why = Signing.verify(keys, ex.getRequestHeaders().getFirst("webhook-id"),
                ex.getRequestHeaders().getFirst("webhook-timestamp"),
                ex.getRequestHeaders().getFirst("webhook-signature"), body,
                Math.floorDiv(System.currentTimeMillis(), 1000L), Signing.TOLERANCE_SECS);
        if (why != null) {
            return error(401, "bad_signature", why);
        }
        try {
            Map<String, Object> cancel = (Map<String, Object>) Json.parse(utf8(body));
            Object shard = cancel.get("shard") == null ? 0L : cancel.get("shard");
            boolean[] found = {false};
            // Atomic with the handler's `running.remove`: only a thread still on this run is interrupted.
            running.computeIfPresent(cancel.get("run_id") + "/" + shard + "/" + cancel.get("attempt"), (k, t) -> {
                found[0] = true;
                t.interrupt();
                return t;
            });
            log("cancel of run " + cancel.get("run_id") + " attempt " + cancel.get("attempt")
                    + (found[0] ? ": interrupting its handler" : ": not running here"));
        } catch (CharacterCodingException | RuntimeException e) {
            return error(400, "bad_cancel", "the body is not a JSON object");
        }
        return new Reply(200, "{}");
    }

    private static Reply error(int status, String code, String message) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("code", code);
        m.put("message", message);
        return new Reply(status, Json.write(m));
    }

    private static String utf8(byte[] bytes) throws CharacterCodingException {
        return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(bytes)).toString();
    }

    private void exchange(HttpExchange ex) throws IOException {
        try (ex) {
            Reply reply;
            String path = ex.getRequestURI().getPath();
            if ("GET".equals(ex.getRequestMethod()) && path.endsWith("/healthz")) {
                reply = new Reply(draining ? 503 : 200, draining ? "{\"ok\":false}" : "{\"ok\":true}");
            } else if (!"POST".equals(ex.getRequestMethod())) {
                reply = error(405, "method_not_allowed", "POST deliveries here");
            } else {
                byte[] body = readAtMost(ex.getRequestBody(), MAX_BODY);
                if (body == null) {
                    reply = error(413, "payload_too_large", "at most " + MAX_BODY + " bytes");
                } else if (path.endsWith("/cancel")) {
                    reply = handleCancel(ex, body);
                } else {
                    reply = handleDelivery(ex, body);
                }
            }
            byte[] out = reply.body.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("content-type", "application/json");
            ex.sendResponseHeaders(reply.status, out.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(out);
            }
        }
    }

    /** The whole body, or null when it is longer than {@code max}. */
    private static byte[] readAtMost(InputStream in, int max) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] chunk = new byte[8192];
        int n;
        while ((n = in.read(chunk)) > 0) {
            if (buf.size() + n > max) {
                return null;
            }
            buf.write(chunk, 0, n);
        }
        return buf.toByteArray();
    }

    // -- calls to Sundial ----------------------------------------------------------------------

    /** A signed call to the first scheduler that answers (not 5xx); null when none did. */
    @SuppressWarnings("unchecked")
    private Map<String, Object> call(String path, Map<String, Object> payload, int[] statusOut) {
        byte[] body = Json.write(payload).getBytes(StandardCharsets.UTF_8);
        for (String base : sundialUrls) {
            String msgId = "msg_" + UUID.randomUUID().toString().replace("-", ""); // fresh per call
            long ts = Math.floorDiv(System.currentTimeMillis(), 1000L);
            HttpRequest req = HttpRequest.newBuilder(URI.create(base + path))
                    .timeout(Duration.ofSeconds(10))
                    .header("content-type", "application/json")
                    .header("sundial-app-id", appId)
                    .header("webhook-id", msgId)
                    .header("webhook-timestamp", Long.toString(ts))
                    .header("webhook-signature", Signing.sign(keys.get(0), msgId, ts, body))
                    .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                    .build();
            try {
                HttpResponse<String> resp = client.send(req, HttpResponse.BodyHandlers.ofString());
                statusOut[0] = resp.statusCode();
                if (resp.statusCode() >= 500) {
                    log(path + " at " + base + ": " + resp.statusCode());
                    continue;
                }
                if (resp.statusCode() != 200) {
                    log(path + " at " + base + " refused: " + resp.statusCode() + " " + resp.body());
                    return null;
                }
                return (Map<String, Object>) Json.parse(resp.body());
            } catch (IOException | RuntimeException e) {
                log(path + " at " + base + ": " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
        return null;
    }

    private boolean register(String address) {
        Map<String, Object> req = new LinkedHashMap<>();
        req.put("address", address);
        req.put("name", "java-" + address.replaceAll("^https?://", "").replaceAll("/+$", ""));
        req.put("tags", List.of("java"));
        req.put("metadata", Map.of("language", "java", "jdk", System.getProperty("java.version")));
        req.put("handlers", new ArrayList<>(handlers.keySet()));
        Map<String, Object> resp = call("/api/v1/executors/register", req, new int[1]);
        if (resp == null) {
            return false;
        }
        executorId = (String) resp.get("executor_id");
        if (resp.get("heartbeat_interval_ms") instanceof Number) {
            heartbeatMs = Math.max(100, ((Number) resp.get("heartbeat_interval_ms")).longValue());
        }
        log("registered as " + executorId + " (handlers " + handlers.keySet() + ", heartbeat every " + heartbeatMs
                + " ms, jobs created " + resp.get("jobs_created") + ")");
        return true;
    }

    private void heartbeat() {
        TreeSet<String> runs = new TreeSet<>();
        for (String key : running.keySet()) {
            runs.add(key.substring(0, key.indexOf('/')));
        }
        Map<String, Object> req = new LinkedHashMap<>();
        req.put("executor_id", executorId);
        req.put("running", running.size());
        req.put("running_runs", new ArrayList<>(runs));
        int[] status = new int[1];
        if (call("/api/v1/executors/heartbeat", req, status) == null && status[0] == 404) {
            log("Sundial does not know this executor any more: registering again");
            executorId = null;
        }
    }

    /** Registers (retrying with backoff), then heartbeats every heartbeat_interval_ms until stopped. */
    private void heartbeatLoop(String address) {
        long backoff = 1000;
        while (!draining) {
            long sleep;
            if (executorId == null) {
                sleep = register(address) ? heartbeatMs : backoff;
                backoff = executorId == null ? Math.min(backoff * 2, 30_000) : 1000;
            } else {
                heartbeat();
                sleep = heartbeatMs;
            }
            try {
                Thread.sleep(sleep);
            } catch (InterruptedException e) {
                return; // shutting down
            }
        }
    }

    // -- serving -------------------------------------------------------------------------------

    /**
     * Listen on {@code bind:port} (0: any free port) and, given an app id and a scheduler URL,
     * register {@code address} (null: {@code http://127.0.0.1:<port>/}). Returns the bound port.
     */
    public int start(String bind, int port, String address, int threads) throws IOException {
        pool = new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(4096),
                new ThreadPoolExecutor.CallerRunsPolicy()); // a full queue slows the acceptor down, drops nothing
        server = HttpServer.create(new InetSocketAddress(bind, port), 1024); // listen backlog for bursts
        server.setExecutor(pool);
        server.createContext("/", this::exchange);
        server.start();
        int bound = server.getAddress().getPort();
        String addr = address == null || address.isBlank() ? "http://127.0.0.1:" + bound + "/" : address.trim();
        log("Java executor listening on http://" + bind + ":" + bound + "/ (address " + addr + ", handlers "
                + handlers.keySet() + ")");
        if (appId.isEmpty() || sundialUrls.isEmpty()) {
            log("SUNDIAL_APP_ID or SUNDIAL_URL not set: not registering (deliveries to a static endpoint still work)");
        } else {
            heartbeats = new Thread(() -> heartbeatLoop(addr), "sundial-heartbeat");
            heartbeats.setDaemon(true);
            heartbeats.start();
        }
        return bound;
    }

    /** Answer new deliveries 503, deregister, let work in flight finish (at most {@code graceMs}), close. */
    public void stop(long graceMs) {
        draining = true;
        log("draining: new deliveries get 503 executor_offline");
        if (heartbeats != null) {
            heartbeats.interrupt();
            try {
                heartbeats.join(12_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        String id = executorId;
        if (id != null && call("/api/v1/executors/deregister", Map.of("executor_id", id), new int[1]) != null) {
            log("deregistered " + id);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(graceMs);
        synchronized (inFlight) {
            while (inFlight.get() > 0 && deadline - System.nanoTime() > 0) {
                try {
                    inFlight.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                } catch (InterruptedException e) {
                    break;
                }
            }
        }
        server.stop(1); // answers being written get a second
        pool.shutdown();
        log("stopped (" + inFlight.get() + " deliveries still running)");
    }

    // -- the example's handlers and main -------------------------------------------------------

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Object v) {
        return v instanceof Map ? (Map<String, Object>) v : Map.of();
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("--verify-vectors")) {
            System.exit(VectorCheck.run(Path.of(args[1])));
        }
        if (args.length == 1 && args[0].equals("--json-echo")) { // one JSON text per line in, compact JSON out
            for (String line : new String(System.in.readAllBytes(), StandardCharsets.UTF_8).split("\n", -1)) {
                if (line.isEmpty()) {
                    continue;
                }
                try {
                    System.out.println(Json.write(Json.parse(line)));
                } catch (Json.ParseException e) {
                    System.out.println("error: " + e.getMessage());
                }
            }
            return;
        }
        String secret = System.getenv("SUNDIAL_SECRET");
        if (secret == null || secret.isBlank()) {
            System.err.println("set SUNDIAL_SECRET to the app's signing secret (whsec_…; during a rotation: both, comma-separated)");
            System.exit(2);
        }
        Executor executor = new Executor(secret, System.getenv("SUNDIAL_APP_ID"),
                env("SUNDIAL_URL", "http://127.0.0.1:7700"));

        executor.handler("java.hello", (params, delivery) -> {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("echo", params);
            out.put("by", "java");
            out.put("attempt", delivery.get("attempt"));
            return out;
        });
        executor.handler("java.sum", (params, delivery) -> {
            double sum = 0;
            for (Object x : (List<Object>) obj(params).getOrDefault("numbers", List.of())) {
                sum += ((Number) x).doubleValue();
            }
            return Map.of("sum", sum);
        });
        executor.handler("java.sleep", (params, delivery) -> { // interrupted by Sundial's cancel
            long ms = ((Number) obj(params).getOrDefault("ms", 1000L)).longValue();
            Thread.sleep(ms);
            return Map.of("slept_ms", ms);
        });
        executor.handler("java.fail", (params, delivery) -> {
            throw new Failure("failed on purpose", !Boolean.FALSE.equals(obj(params).get("retry")));
        });

        executor.start(env("BIND", "127.0.0.1"), Integer.parseInt(env("PORT", "9000")), System.getenv("ADDRESS"),
                Integer.parseInt(env("THREADS", "32")));
        long grace = Long.parseLong(env("GRACE_MS", "30000"));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> executor.stop(grace), "sundial-shutdown"));
        Thread.currentThread().join(); // serve until SIGTERM / SIGINT
    }

    static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : v;
    }
}
