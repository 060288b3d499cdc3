package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The znode JSON, byte for byte as Python's znode_data writes it. */
class RegistrationDataTest {
    @Test
    void sameBytesAsPython() {
        // python -c 'from taskring._registration import znode_data; print(znode_data(address="h:7100",
        //   namespace="shop", task_types=["send_email","charge"], max_in_flight=64, pid=4242).decode())'
        assertEquals("{\"address\":\"h:7100\",\"namespace\":\"shop\",\"task_types\":[\"charge\",\"send_email\"],"
                        + "\"max_in_flight\":64,\"pid\":4242}",
                new String(RegistrationData.json("h:7100", "shop", List.of("send_email", "charge"), 64, 4242), StandardCharsets.UTF_8));
        assertEquals("/executors/shop/host-1", RegistrationData.path("shop", "host-1"));
    }

    @Test
    void nonAsciiIsEscapedLikeJsonDumps() {
        // json.dumps({"a": "h\u00e9\U0001F600\x7f\x01\"\\"}) == '{"a": "h\\u00e9\\ud83d\\ude00\\u007f\\u0001\\"\\\\"}'
        StringBuilder out = new StringBuilder();
        RegistrationData.string(out, "h\u00e9\uD83D\uDE00\u007f\u0001\"\\");
        assertEquals("\"h\\u00e9\\ud83d\\ude00\\u007f\\u0001\\\"\\\\\"", out.toString());
    }

    @Test
    void connectStringSplitsOffTheChroot() {
        assertEquals(new ZkConnect("127.0.0.1:22181", "/taskring"), ZkConnect.parse("127.0.0.1:22181/taskring"));
        assertEquals(new ZkConnect("a:1,b:2", ""), ZkConnect.parse("a:1,b:2"));
        assertEquals(new ZkConnect("a:1", ""), ZkConnect.parse("a:1/"));
        assertEquals(new ZkConnect("a:1", "/x/y"), ZkConnect.parse("a:1/x/y/"));
    }
}
