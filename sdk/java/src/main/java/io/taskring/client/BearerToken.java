package io.taskring.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;

/**
 * Adds {@code authorization: Bearer <secret>} to every call (docs/security.md). A plain
 * interceptor rather than CallCredentials, so it works on plaintext channels too. The
 * secret is never logged: {@link #toString} does not show it.
 */
final class BearerToken implements ClientInterceptor {
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    private final String header;

    BearerToken(String secret) {
        if (secret == null || secret.isEmpty()) {
            throw new IllegalArgumentException("token: must be a non-empty string");
        }
        if (!secret.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
            // Said without the secret: an error message must never repeat it.
            throw new IllegalArgumentException("token: must be printable ASCII without spaces");
        }
        this.header = "Bearer " + secret;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
            @Override
            public void start(Listener<R> listener, Metadata headers) {
                headers.put(AUTHORIZATION, header);
                super.start(listener, headers);
            }
        };
    }

    @Override
    public String toString() {
        return "BearerToken(<hidden>)";
    }
}
