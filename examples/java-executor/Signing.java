import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Standard Webhooks signing, as Sundial does it: {@code webhook-signature: v1,<base64
 * HMAC-SHA256(key, "{id}.{timestamp}.{body}")>}, key = the base64 after {@code whsec_}, timestamps in
 * Unix seconds, several signatures (space separated) while a secret is rotated: one match is enough.
 */
public final class Signing {
    /** Timestamps further than this from now, either way, are refused. */
    public static final long TOLERANCE_SECS = 300;

    private Signing() {}

    /** The key bytes of a {@code whsec_<base64>} secret (the prefix is optional). */
    public static byte[] key(String secret) {
        String b64 = secret.trim();
        if (b64.startsWith("whsec_")) {
            b64 = b64.substring("whsec_".length());
        }
        byte[] key = Base64.getDecoder().decode(b64);
        if (key.length == 0) {
            throw new IllegalArgumentException("empty signing secret");
        }
        return key;
    }

    /** The keys of every secret in a comma- or space-separated list (a rotation: old and new). */
    public static List<byte[]> keys(String secrets) {
        List<byte[]> keys = new ArrayList<>();
        for (String s : secrets.split("[,\\s]+")) {
            if (!s.isEmpty()) {
                keys.add(key(s));
            }
        }
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("no signing secret");
        }
        return keys;
    }

    static byte[] mac(byte[] key, String msgId, String timestamp, byte[] body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update((msgId + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
            return mac.doFinal(body);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    /** {@code v1,<base64>} for one message. */
    public static String sign(byte[] key, String msgId, long timestamp, byte[] body) {
        return "v1," + Base64.getEncoder().encodeToString(mac(key, msgId, Long.toString(timestamp), body));
    }

    /**
     * Check one message. Returns null when it verifies, else why not: {@code missing_header},
     * {@code bad_timestamp}, {@code stale_timestamp}, {@code future_timestamp} or {@code bad_signature}.
     * Header values may be null (absent). Every candidate is compared in constant time.
     */
    public static String verify(List<byte[]> keys, String msgId, String timestamp, String signatures,
                                byte[] body, long nowSecs, long toleranceSecs) {
        if (msgId == null || msgId.isEmpty() || timestamp == null || signatures == null) {
            return "missing_header";
        }
        long ts;
        try {
            ts = Long.parseLong(timestamp.trim());
        } catch (NumberFormatException e) {
            return "bad_timestamp";
        }
        if (ts < nowSecs - toleranceSecs) { // compared so that no huge value overflows
            return "stale_timestamp";
        }
        if (ts > nowSecs + toleranceSecs) {
            return "future_timestamp";
        }
        String[] candidates = signatures.trim().split("\\s+");
        boolean ok = false;
        for (byte[] key : keys) {
            // Signed over the timestamp as its number is written (as Sundial does).
            byte[] expected = sign(key, msgId, ts, body).getBytes(StandardCharsets.US_ASCII);
            for (String candidate : candidates) {
                // A `v1a,…` or any other scheme never equals a `v1,…` string: skipped by the compare.
                // Constant time, and no early exit: every candidate is checked against every key.
                ok |= MessageDigest.isEqual(expected, candidate.getBytes(StandardCharsets.US_ASCII));
            }
        }
        return ok ? null : "bad_signature";
    }
}
