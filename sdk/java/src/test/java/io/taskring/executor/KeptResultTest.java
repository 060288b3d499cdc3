package io.taskring.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A handler's result as Outcome.result_json: any JSON value, at most 65,536 bytes of it. */
class KeptResultTest {
    @Test
    void anyJsonValueIsKeptCompact() {
        assertEquals(new KeptResult("{\"tags\":[\"a\",1.5]}", ""), KeptResult.of(Map.of("tags", List.of("a", 1.5))));
        assertEquals(new KeptResult("\"done\"", ""), KeptResult.of("done"));
        assertEquals(new KeptResult("42", ""), KeptResult.of(42));
        assertEquals(new KeptResult("", ""), KeptResult.of(null), "null: no result, not a failure");
    }

    @Test
    void exactlyTheLimitIsKeptOneByteMoreIsNot() {
        String fits = "x".repeat(KeptResult.MAX_BYTES - 2); // with its quotes: 65,536 bytes
        assertEquals("\"" + fits + "\"", KeptResult.of(fits).json());
        KeptResult over = KeptResult.of(fits + "x");
        assertEquals("", over.json());
        assertEquals("result: 65537 bytes as JSON, more than 65536", over.error());
        // Bytes of UTF-8, not chars: 21,846 three-byte chars are 65,540 bytes with the quotes.
        assertTrue(KeptResult.of("€".repeat(21_846)).error().startsWith("result: 65540 bytes"));
    }

    @Test
    void whatIsNotJsonIsRefusedSayingWhy() {
        KeptResult bean = KeptResult.of(new Object());
        assertTrue(bean.error().startsWith("result: the value given to setResult is not JSON ("), bean.error());
        assertEquals("", bean.json());
        KeptResult nan = KeptResult.of(Map.of("ratio", Double.NaN));
        assertTrue(nan.error().startsWith("result: ") && nan.error().contains("not JSON compliant"), nan.error());
    }
}
