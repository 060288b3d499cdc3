package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.taskring.TaskState;
import io.taskring.WireLimits;
import io.taskring.errors.InvalidTaskSpecException;
import io.taskring.errors.ProtocolException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import taskring.v1.Taskring;

/** CronRuleSpec to the wire CronRule and back, and the wire rule to CronRuleInfo (Python: cron.py's to_pb and _info). */
class CronRuleSpecTest {
    private static CronRuleSpec.Builder nightly() {
        return CronRuleSpec.builder("billing", "nightly", "reconcile", "0 0 * * *");
    }

    @Test
    void unsetOptionalFieldsStayUnsetOnTheWire() {
        Taskring.CronRule r = nightly().build().toWire();
        assertFalse(r.hasTimeoutMs(), "timeout_ms must be left unset (server default), not 0");
        assertFalse(r.hasMaxRetries(), "max_retries must be left unset (server default), not 0");
        assertEquals("{}", r.getPayloadJson());
        assertEquals("billing/nightly/reconcile/0 0 * * */", r.getNamespace() + "/" + r.getName() + "/"
                + r.getTaskType() + "/" + r.getSchedule() + "/" + r.getTimeZone());
        assertEquals(0, r.getCatchUpLimit());
    }

    @Test
    void everyFieldGoesOnTheWire() {
        Taskring.CronRule r = nightly().timeZone("Asia/Singapore").payloadJson("{ \"scope\" : \"all\", \"n\": [1, 2.5] }")
                .onRepeatedHour("twice").onSkippedHour("skip").catchUp("all").catchUpLimit(WireLimits.UINT32_MAX)
                .overlap("queue_one").ownerTeam("payments").description("midnight SGT")
                .timeout(Duration.ofNanos(1_500_001)).maxRetries(0).build().toWire();
        assertEquals("{\"scope\":\"all\",\"n\":[1,2.5]}", r.getPayloadJson());
        assertEquals("Asia/Singapore", r.getTimeZone());
        assertEquals("twice/skip/all/queue_one/payments/midnight SGT", r.getOnRepeatedHour() + "/" + r.getOnSkippedHour()
                + "/" + r.getCatchUp() + "/" + r.getOverlap() + "/" + r.getOwnerTeam() + "/" + r.getDescription());
        assertEquals(WireLimits.UINT32_MAX, Integer.toUnsignedLong(r.getCatchUpLimit()));
        assertTrue(r.hasTimeoutMs());
        assertEquals(2, r.getTimeoutMs(), "1.5 ms is rounded up to whole milliseconds");
        assertTrue(r.hasMaxRetries(), "max_retries 0 is a value, not unset");
        assertEquals(0, r.getMaxRetries());
    }

    @Test
    void aPayloadObjectIsSentAsCompactJson() {
        assertEquals("{\"scope\":\"eu\"}", nightly().payload(Map.of("scope", "eu")).build().toWire().getPayloadJson());
        assertEquals("eu", nightly().payload(Map.of("scope", "eu")).build().payload().get("scope").asText());
    }

    @Test
    void specSurvivesTheWireUnchanged() {
        CronRuleSpec spec = nightly().timeZone("UTC").payload(Map.of("a", 1)).catchUpLimit(7).ownerTeam("t")
                .timeout(Duration.ofSeconds(30)).maxRetries(2).build();
        assertEquals(spec, CronRuleSpec.fromWire(spec.toWire()));
        CronRuleSpec bare = nightly().build();
        assertEquals(bare, CronRuleSpec.fromWire(bare.toWire()));
        assertEquals(Optional.empty(), CronRuleSpec.fromWire(bare.toWire()).timeout());
        assertEquals(spec, spec.toBuilder().build());
        assertEquals("5 * * * *", spec.toBuilder().schedule("5 * * * *").build().schedule());
    }

    @Test
    void refusesLocallyOnlyWhatTheWireCannotCarry() {
        assertEquals("payload", assertThrows(InvalidTaskSpecException.class, () -> nightly().payloadJson("[1]")).field());
        assertEquals("payload", assertThrows(InvalidTaskSpecException.class, () -> nightly().payloadJson("{")).field());
        assertEquals("timeout", assertThrows(InvalidTaskSpecException.class,
                () -> nightly().timeout(Duration.ofMillis(-1)).build()).field());
        assertEquals("timeout", assertThrows(InvalidTaskSpecException.class,
                () -> nightly().timeout(Duration.ofMillis(WireLimits.UINT32_MAX + 1)).build()).field());
        assertEquals("catch_up_limit", assertThrows(InvalidTaskSpecException.class,
                () -> nightly().catchUpLimit(-1).build()).field());
        assertEquals("catch_up_limit", assertThrows(InvalidTaskSpecException.class,
                () -> nightly().catchUpLimit(WireLimits.UINT32_MAX + 1).build()).field());
        // The server's calls, as in Python: a bad zone, schedule, name or policy builds fine.
        CronRuleSpec odd = CronRuleSpec.builder("Billing!", "", "t", "not a schedule").timeZone("Mars/Olympus_Mons")
                .catchUp("sometimes").maxRetries(-3).build();
        assertEquals("Mars/Olympus_Mons", odd.toWire().getTimeZone());
        assertEquals(-3, odd.toWire().getMaxRetries());
    }

    private static Taskring.CronRule.Builder stored() {
        return nightly().timeZone("Asia/Singapore").build().toWire().toBuilder().setCatchUp("latest")
                .setCreatedAt("2029-12-31T10:00:00.250Z").setUpdatedAt("2029-12-31T12:00:00+02:00");
    }

    @Test
    void infoOfARuleThatHasNotFired() {
        CronRuleInfo info = CronRuleInfo.fromWire(stored().setNextFireTime("2030-01-01T16:00:00Z")
                .setLastFireStateValue(Taskring.TaskState.TASK_STATE_QUEUED_VALUE).build());
        assertEquals(Optional.of(Instant.parse("2030-01-01T16:00:00Z")), info.nextFireTime());
        assertEquals(Optional.empty(), info.lastFireTime());
        assertEquals("", info.lastFireTaskId());
        assertEquals(Optional.empty(), info.lastFireState(), "no last fire: no state, whatever the wire's value");
        assertEquals(Optional.of(Instant.parse("2029-12-31T10:00:00.250Z")), info.createdAt());
        assertEquals(Optional.of(Instant.parse("2029-12-31T10:00:00Z")), info.updatedAt());
        assertEquals("latest", info.spec().catchUp());
        assertFalse(info.paused());
    }

    @Test
    void infoOfAPausedRuleThatFired() {
        CronRuleInfo info = CronRuleInfo.fromWire(stored().setPaused(true).setLastFireTime("2029-12-31T16:00:00Z")
                .setLastFireTaskId("cron-abc-1893427200000").setLastFireState(Taskring.TaskState.TASK_STATE_SUCCEEDED)
                .build());
        assertTrue(info.paused());
        assertEquals(Optional.empty(), info.nextFireTime());
        assertEquals(Optional.of(TaskState.SUCCEEDED), info.lastFireState());
        assertEquals(Optional.of(Instant.parse("2029-12-31T16:00:00Z")), info.lastFireTime());
        assertEquals("cron-abc-1893427200000", info.lastFireTaskId());
    }

    @Test
    void whatThisSdkCannotReadIsAProtocolError() {
        assertThrows(ProtocolException.class, () -> CronRuleInfo.fromWire(stored().setLastFireTaskId("t")
                .setLastFireStateValue(99).build()));
        assertThrows(ProtocolException.class, () -> CronRuleInfo.fromWire(stored().setPayloadJson("[1]").build()));
        assertThrows(ProtocolException.class, () -> CronRuleInfo.fromWire(stored().setCreatedAt("yesterday").build()));
        assertEquals("{}", CronRuleInfo.fromWire(stored().setPayloadJson("").build()).spec().payloadJson());
    }
}
