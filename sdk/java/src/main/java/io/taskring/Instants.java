package io.taskring;

import io.taskring.errors.ProtocolException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;

/**
 * Instants on the wire: RFC 3339 with an offset. Formatting mirrors Python's
 * {@code datetime.isoformat()} (what the Python SDK's {@code format_instant} sends), so
 * every SDK puts the same bytes on the wire for the same instant:
 * {@code 2030-01-01T08:00:00+08:00}, fractional seconds only when non-zero and then
 * as six digits, UTC as {@code +00:00} (never {@code Z}).
 */
public final class Instants {
    private static final DateTimeFormatter DATE_TIME = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss");

    private Instants() {}

    /** An instant, written in UTC. */
    public static String format(Instant instant) {
        return format(instant.atOffset(ZoneOffset.UTC));
    }

    /**
     * The caller's own offset is kept (the server stores UTC). Python has microseconds
     * only; a finer Java instant is rounded up to the next microsecond, so a
     * scheduled task never runs early.
     */
    public static String format(OffsetDateTime time) {
        OffsetDateTime t = time;
        int subMicro = t.getNano() % 1000;
        if (subMicro != 0) {
            t = t.plusNanos(1000 - subMicro);
        }
        StringBuilder out = new StringBuilder(32).append(DATE_TIME.format(t));
        int micros = t.getNano() / 1000;
        if (micros != 0) {
            out.append('.').append(String.format("%06d", micros));
        }
        return out.append(offset(t.getOffset())).toString();
    }

    private static String offset(ZoneOffset offset) {
        // ZoneOffset.getId() is "+05:30" or "+05:30:15" like Python, except "Z" for zero.
        return offset.getTotalSeconds() == 0 ? "+00:00" : offset.getId();
    }

    /** An RFC 3339 time from the server ({@code Z} or an offset); empty means unset (null). */
    public static OffsetDateTime parseOrNull(String text) {
        if (text == null || text.isEmpty()) {
            return null;
        }
        try {
            return parse(text);
        } catch (DateTimeParseException e) {
            throw new ProtocolException("server sent a malformed time '" + text + "'", e);
        }
    }

    /** Parses RFC 3339 (lower-case t/z and a space separator too, as RFC 3339 allows). */
    public static OffsetDateTime parse(String text) {
        String t = text.trim();
        if (t.length() > 10 && (t.charAt(10) == ' ' || t.charAt(10) == 't')) {
            t = t.substring(0, 10) + 'T' + t.substring(11);
        }
        if (t.endsWith("z")) {
            t = t.substring(0, t.length() - 1) + 'Z';
        }
        return OffsetDateTime.parse(t, DateTimeFormatter.ISO_OFFSET_DATE_TIME);
    }
}
