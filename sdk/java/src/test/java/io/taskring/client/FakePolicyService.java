package io.taskring.client;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import taskring.v1.PolicyServiceGrpc;
import taskring.v1.Taskring;

/**
 * A fake node's PolicyService with the real one's outline (the contract in the proto): API entries
 * over file entries kept by "namespace/type", get answering source "none" and "{}" for a type with
 * neither, an empty reason refused naming {@code reason}, one policy check naming
 * {@code policy_json.concurrency.per_type}, FAILED_PRECONDITION on a stale {@code if_revision},
 * NOT_FOUND for a delete without an API entry; or every call failing with {@link #failWith}.
 * Records the requests.
 */
final class FakePolicyService extends PolicyServiceGrpc.PolicyServiceImplBase {
    static final String UPDATED = "2030-01-02T03:04:05.678Z";

    /** The policies file's entries, as JSON text. */
    final Map<String, String> file = Collections.synchronizedMap(new TreeMap<>());
    /** The API's entries, as the wire answers them. */
    final Map<String, Taskring.TypePolicy> api = Collections.synchronizedMap(new TreeMap<>());
    final List<Object> requests = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger calls = new AtomicInteger();
    volatile Status failWith;

    private static String key(String namespace, String taskType) {
        return namespace + "/" + taskType;
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

    private static boolean refused(StreamObserver<?> out, Status status, String description) {
        out.onError(status.withDescription(description).asRuntimeException());
        return true;
    }

    /** What is in effect for the type: the API's entry, else the file's, else none. */
    private Taskring.TypePolicy effective(String namespace, String taskType) {
        String k = key(namespace, taskType);
        Taskring.TypePolicy a = api.get(k);
        if (a != null) {
            return a;
        }
        String f = file.get(k);
        Taskring.TypePolicy.Builder p = Taskring.TypePolicy.newBuilder().setNamespace(namespace).setTaskType(taskType);
        return f == null ? p.setPolicyJson("{}").setSource("none").build()
                : p.setPolicyJson(f).setSource("file").setFilePolicyJson(f).build();
    }

    private boolean staleRevision(String k, boolean has, long ifRevision, StreamObserver<?> out) {
        Taskring.TypePolicy a = api.get(k);
        long stored = a == null ? 0 : a.getRevision();
        return has && ifRevision != stored && refused(out, Status.FAILED_PRECONDITION,
                "if_revision: the API entry is at revision " + stored + ", not " + ifRevision);
    }

    @Override
    public void getTypePolicy(Taskring.TypePolicyRef req, StreamObserver<Taskring.TypePolicy> out) {
        if (!failed(req, out)) {
            reply(out, effective(req.getNamespace(), req.getTaskType()));
        }
    }

    @Override
    public void listTypePolicies(Taskring.ListTypePoliciesRequest req, StreamObserver<Taskring.ListTypePoliciesResponse> out) {
        if (failed(req, out)) {
            return;
        }
        TreeMap<String, Taskring.TypePolicy> all = new TreeMap<>();
        synchronized (file) {
            file.keySet().forEach(k -> all.put(k, null));
        }
        synchronized (api) {
            api.keySet().forEach(k -> all.put(k, null));
        }
        Taskring.ListTypePoliciesResponse.Builder r = Taskring.ListTypePoliciesResponse.newBuilder();
        for (String k : all.keySet()) {
            String[] parts = k.split("/", 2);
            if (req.getNamespace().isEmpty() || parts[0].equals(req.getNamespace())) {
                r.addPolicies(effective(parts[0], parts[1]));
            }
        }
        reply(out, r.build());
    }

    @Override
    public void putTypePolicy(Taskring.PutTypePolicyRequest req, StreamObserver<Taskring.TypePolicy> out) {
        if (failed(req, out)) {
            return;
        }
        String k = key(req.getNamespace(), req.getTaskType());
        if (req.getPolicyJson().contains("\"per_type\":0")) {
            refused(out, Status.INVALID_ARGUMENT, "policy_json.concurrency.per_type: must be a positive integer, got 0");
            return;
        }
        if (req.getReason().isEmpty()) {
            refused(out, Status.INVALID_ARGUMENT, "reason: required (it goes in the audit trail)");
            return;
        }
        if (staleRevision(k, req.hasIfRevision(), req.getIfRevision(), out)) {
            return;
        }
        Taskring.TypePolicy before = api.get(k);
        Taskring.TypePolicy.Builder p = Taskring.TypePolicy.newBuilder().setNamespace(req.getNamespace())
                .setTaskType(req.getTaskType()).setPolicyJson(req.getPolicyJson()).setSource("api")
                .setRevision(before == null ? 1 : before.getRevision() + 1).setUpdatedBy("ops-token")
                .setUpdatedAt(UPDATED).setFilePolicyJson(file.getOrDefault(k, ""));
        api.put(k, p.build());
        reply(out, p.build());
    }

    @Override
    public void deleteTypePolicy(Taskring.DeleteTypePolicyRequest req, StreamObserver<Taskring.TypePolicy> out) {
        if (failed(req, out)) {
            return;
        }
        String k = key(req.getNamespace(), req.getTaskType());
        if (req.getReason().isEmpty()) {
            refused(out, Status.INVALID_ARGUMENT, "reason: required (it goes in the audit trail)");
            return;
        }
        if (!api.containsKey(k)) {
            refused(out, Status.NOT_FOUND, "no API policy entry for " + k);
            return;
        }
        if (staleRevision(k, req.hasIfRevision(), req.getIfRevision(), out)) {
            return;
        }
        api.remove(k);
        reply(out, effective(req.getNamespace(), req.getTaskType()));
    }
}
