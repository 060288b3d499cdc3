package io.taskring.client;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import taskring.v1.CronServiceGrpc;
import taskring.v1.Taskring;

/**
 * A fake node's CronService with the real one's outline (dispatcher/cron/api.py): rules kept by
 * "namespace/name", policies filled in, ALREADY_EXISTS / NOT_FOUND, one field check naming
 * {@code rule.time_zone}; or every call failing with {@link #failWith}. Records the requests.
 */
final class FakeCronService extends CronServiceGrpc.CronServiceImplBase {
    static final String NEXT_FIRE = "2030-01-01T16:00:00Z";
    static final String CREATED = "2029-12-31T10:00:00.250Z";

    final Map<String, Taskring.CronRule> rules = Collections.synchronizedMap(new TreeMap<>());
    final List<Object> requests = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger calls = new AtomicInteger();
    volatile Status failWith;

    private static String key(String namespace, String name) {
        return namespace + "/" + name;
    }

    private boolean failed(Object request, StreamObserver<?> out) {
        calls.incrementAndGet();
        requests.add(request);
        if (failWith != null) {
            out.onError(failWith.asRuntimeException());
            return true;
        }
        return false;
    }

    private static <T> void reply(StreamObserver<T> out, T value) {
        out.onNext(value);
        out.onCompleted();
    }

    /** The rule as a node stores it: the defaults filled in, the times set. Null after an error was sent. */
    private static Taskring.CronRule normalised(Taskring.CronRule in, StreamObserver<?> out) {
        if (in.getTimeZone().equals("Mars/Olympus_Mons")) {
            out.onError(Status.INVALID_ARGUMENT.withDescription("rule.time_zone: unknown time zone 'Mars/Olympus_Mons'")
                    .asRuntimeException());
            return null;
        }
        Taskring.CronRule.Builder r = in.toBuilder().setNextFireTime(NEXT_FIRE).setCreatedAt(CREATED).setUpdatedAt(CREATED);
        if (r.getCatchUp().isEmpty()) {
            r.setCatchUp("latest");
        }
        if (r.getOverlap().isEmpty()) {
            r.setOverlap("allow");
        }
        if (r.getOnRepeatedHour().isEmpty()) {
            r.setOnRepeatedHour("once");
        }
        if (r.getOnSkippedHour().isEmpty()) {
            r.setOnSkippedHour("at_shift");
        }
        if (r.getCatchUpLimit() == 0) {
            r.setCatchUpLimit(100);
        }
        return r.build();
    }

    @Override
    public void createCronRule(Taskring.PutCronRuleRequest req, StreamObserver<Taskring.PutCronRuleResponse> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.CronRule r = normalised(req.getRule(), out); // the whole rule is validated first
        if (r == null) {
            return;
        }
        String k = key(req.getRule().getNamespace(), req.getRule().getName());
        if (rules.containsKey(k)) {
            out.onError(Status.ALREADY_EXISTS.withDescription("rule: " + k + " already exists").asRuntimeException());
            return;
        }
        rules.put(k, r);
        reply(out, Taskring.PutCronRuleResponse.newBuilder().setRule(r).build());
    }

    @Override
    public void updateCronRule(Taskring.PutCronRuleRequest req, StreamObserver<Taskring.PutCronRuleResponse> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.CronRule r = normalised(req.getRule(), out); // the whole rule is validated first
        if (r == null) {
            return;
        }
        String k = key(req.getRule().getNamespace(), req.getRule().getName());
        if (!rules.containsKey(k)) {
            out.onError(Status.NOT_FOUND.withDescription("rule: no rule " + k).asRuntimeException());
            return;
        }
        rules.put(k, r);
        reply(out, Taskring.PutCronRuleResponse.newBuilder().setRule(r).build());
    }

    private Taskring.CronRule found(Taskring.CronRuleRef ref, StreamObserver<?> out) {
        Taskring.CronRule r = rules.get(key(ref.getNamespace(), ref.getName()));
        if (r == null) {
            out.onError(Status.NOT_FOUND.withDescription("rule: no rule " + key(ref.getNamespace(), ref.getName()))
                    .asRuntimeException());
        }
        return r;
    }

    @Override
    public void getCronRule(Taskring.CronRuleRef req, StreamObserver<Taskring.CronRule> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.CronRule r = found(req, out);
        if (r != null) {
            reply(out, r);
        }
    }

    @Override
    public void listCronRules(Taskring.ListCronRulesRequest req, StreamObserver<Taskring.ListCronRulesResponse> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.ListCronRulesResponse.Builder r = Taskring.ListCronRulesResponse.newBuilder();
        synchronized (rules) {
            rules.values().stream().filter(x -> req.getNamespace().isEmpty() || x.getNamespace().equals(req.getNamespace()))
                    .forEach(r::addRules);
        }
        reply(out, r.build());
    }

    @Override
    public void pauseCronRule(Taskring.CronRuleRef req, StreamObserver<Taskring.CronRule> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.CronRule r = found(req, out);
        if (r != null) {
            r = r.toBuilder().setPaused(true).setNextFireTime("").build();
            rules.put(key(req.getNamespace(), req.getName()), r);
            reply(out, r);
        }
    }

    @Override
    public void resumeCronRule(Taskring.CronRuleRef req, StreamObserver<Taskring.CronRule> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.CronRule r = found(req, out);
        if (r != null) {
            r = r.toBuilder().setPaused(false).setNextFireTime(NEXT_FIRE).build();
            rules.put(key(req.getNamespace(), req.getName()), r);
            reply(out, r);
        }
    }

    @Override
    public void deleteCronRule(Taskring.CronRuleRef req, StreamObserver<Taskring.CronRule> out) {
        if (failed(req, out)) {
            return;
        }
        Taskring.CronRule r = rules.remove(key(req.getNamespace(), req.getName()));
        if (r == null) {
            found(req, out);
            return;
        }
        reply(out, r.toBuilder().setNextFireTime("").build());
    }
}
