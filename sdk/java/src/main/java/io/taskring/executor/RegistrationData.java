package io.taskring.executor;

import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;

/**
 * What a dispatcher reads from {@code /executors/<namespace>/<instance_id>}: byte for byte
 * what Python's {@code znode_data} writes, {@code {"address","namespace","task_types"
 * (sorted),"max_in_flight","pid"}} as compact JSON in that key order, with Python's
 * {@code json.dumps} escaping (non-ASCII as lower-case {@code \\uXXXX}), so dispatchers
 * cannot tell the SDKs apart. Written by hand because no JSON library escapes exactly so.
 */
public final class RegistrationData {
    private RegistrationData() {}

    public static String path(String namespace, String instanceId) {
        return "/executors/" + namespace + "/" + instanceId;
    }

    public static byte[] json(String address, String namespace, Collection<String> taskTypes, int maxInFlight, long pid) {
        // Python's sorted() orders by code point; String order is the same for these ASCII names.
        List<String> sorted = taskTypes.stream().sorted().toList();
        StringBuilder out = new StringBuilder(128);
        out.append("{\"address\":");
        string(out, address);
        out.append(",\"namespace\":");
        string(out, namespace);
        out.append(",\"task_types\":[");
        for (int i = 0; i < sorted.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            string(out, sorted.get(i));
        }
        out.append("],\"max_in_flight\":").append(maxInFlight).append(",\"pid\":").append(pid).append('}');
        return out.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** A JSON string as Python's json.dumps(ensure_ascii=True) writes it. */
    static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c)); // UTF-16 units, as Python
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
