import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Runs the shared signing vectors ({@code sdks/vectors/signing.json}) through {@link Signing}:
 * every {@code sign} case must give its signature, every {@code verify} case its verdict and error.
 *
 * <pre>java -cp out VectorCheck sdks/vectors/signing.json</pre>   (or {@code Executor --verify-vectors …})
 */
public final class VectorCheck {
    private VectorCheck() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java -cp out VectorCheck <signing.json>");
            System.exit(2);
        }
        System.exit(run(Path.of(args[0])));
    }

    /** Prints one line per case; returns the exit status (0: all passed). */
    @SuppressWarnings("unchecked")
    static int run(Path file) throws Exception {
        Map<String, Object> doc = (Map<String, Object>) Json.parse(Files.readString(file, StandardCharsets.UTF_8));
        long tolerance = doc.get("tolerance_secs") instanceof Number
                ? ((Number) doc.get("tolerance_secs")).longValue() : Signing.TOLERANCE_SECS;
        int passed = 0;
        int failed = 0;
        for (Object o : (List<Object>) doc.getOrDefault("sign", List.of())) {
            Map<String, Object> c = (Map<String, Object>) o;
            String got;
            try {
                got = Signing.sign(Signing.key((String) c.get("secret")), (String) c.get("id"),
                        ((Number) c.get("timestamp")).longValue(), ((String) c.get("body")).getBytes(StandardCharsets.UTF_8));
            } catch (RuntimeException e) {
                got = "exception " + e;
            }
            if (got.equals(c.get("signature"))) {
                passed++;
                System.out.println("ok   sign   " + c.get("name"));
            } else {
                failed++;
                System.out.println("FAIL sign   " + c.get("name") + ": expected " + c.get("signature") + ", got " + got);
            }
        }
        for (Object o : (List<Object>) doc.getOrDefault("verify", List.of())) {
            Map<String, Object> c = (Map<String, Object>) o;
            Map<String, Object> h = (Map<String, Object>) c.getOrDefault("headers", Map.of());
            String got;
            try {
                List<byte[]> keys = new ArrayList<>();
                for (Object s : (List<Object>) c.get("secrets")) {
                    keys.add(Signing.key((String) s));
                }
                String err = Signing.verify(keys, (String) h.get("webhook-id"), (String) h.get("webhook-timestamp"),
                        (String) h.get("webhook-signature"), ((String) c.get("body")).getBytes(StandardCharsets.UTF_8),
                        ((Number) c.get("now")).longValue(), tolerance);
                got = err == null ? "ok" : err;
            } catch (RuntimeException e) {
                got = "exception " + e;
            }
            Object wantError = c.get("error");
            String want = Boolean.TRUE.equals(c.get("ok")) ? "ok" : wantError == null ? "an error" : (String) wantError;
            boolean match = want.equals(got) || ("an error".equals(want) && !"ok".equals(got) && !got.startsWith("exception"));
            if (match) {
                passed++;
                System.out.println("ok   verify " + c.get("name") + " (" + got + ")");
            } else {
                failed++;
                System.out.println("FAIL verify " + c.get("name") + ": expected " + want + ", got " + got);
            }
        }
        System.out.println(passed + " passed, " + failed + " failed");
        return failed == 0 && passed > 0 ? 0 : 1;
    }
}
