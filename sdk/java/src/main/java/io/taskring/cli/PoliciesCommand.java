package io.taskring.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Instants;
import io.taskring.Payloads;
import io.taskring.client.BlockingPolicies;
import io.taskring.client.TaskringClient;
import io.taskring.client.TypePolicy;
import io.taskring.errors.InvalidTaskSpecException;
import io.taskring.errors.TaskringException;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code Main policies ...}: task types' policy entries from the shell, the same command in every
 * SDK's CLI (Go, Java, Node):
 *
 * <pre>
 *   policies put    --nodes HOST:PORT --namespace NS --type T --policy JSON --reason R [--if-revision N]
 *   policies get    --nodes HOST:PORT --namespace NS --type T
 *   policies delete --nodes HOST:PORT --namespace NS --type T --reason R [--if-revision N]
 *   policies list   --nodes HOST:PORT [--namespace NS]
 * </pre>
 *
 * <p>One JSON object per policy and line ({@code list}: one per policy, nothing for none) with
 * exactly the keys namespace, task_type, policy (the object), source, revision (a number),
 * updated_by, updated_at (RFC 3339, null when none) and file_policy (the object, null when the file
 * has none). A {@code --policy} that is not a JSON object is bad usage (exit 2, naming
 * {@code policy_json}), nothing sent; the server's refusals exit 1 as in {@link CronCommand}.
 */
final class PoliciesCommand {
    private static final Set<String> PUT = Set.of("nodes", "namespace", "type", "policy", "reason", "if-revision");
    private static final Set<String> GET = Set.of("nodes", "namespace", "type");
    private static final Set<String> DELETE = Set.of("nodes", "namespace", "type", "reason", "if-revision");
    private static final Set<String> LIST = Set.of("nodes", "namespace");
    private static final ObjectMapper JSON = new ObjectMapper();

    private PoliciesCommand() {}

    /** {@code args} without the leading "policies". Exit status as {@link Main}: 0, 1 refused, 2 usage. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (args.length < 1) {
            return usage(err, "give an action: put, get, delete or list");
        }
        String action = args[0];
        Set<String> allowed = switch (action) {
            case "put" -> PUT;
            case "get" -> GET;
            case "delete" -> DELETE;
            case "list" -> LIST;
            default -> null;
        };
        if (allowed == null) {
            return usage(err, "unknown action " + action + ": put, get, delete or list");
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String key = args[i].startsWith("--") ? args[i].substring(2) : null;
            if (key == null || !allowed.contains(key) || i + 1 >= args.length) {
                return usage(err, "unexpected argument " + args[i] + " for policies " + action);
            }
            opts.put(key, args[++i]);
        }
        List<String> required = switch (action) {
            case "put" -> List.of("nodes", "namespace", "type", "policy", "reason");
            case "get" -> List.of("nodes", "namespace", "type");
            case "delete" -> List.of("nodes", "namespace", "type", "reason");
            default -> List.of("nodes");
        };
        for (String r : required) {
            if (!opts.containsKey(r)) {
                return usage(err, "policies " + action + " needs --" + String.join(", --", required));
            }
        }
        Long ifRevision = null;
        if (opts.containsKey("if-revision")) {
            try {
                ifRevision = Long.parseLong(opts.get("if-revision"));
            } catch (NumberFormatException e) {
                return usage(err, "--if-revision: not a number: " + opts.get("if-revision"));
            }
        }
        String policy = null;
        if (action.equals("put")) {
            try {
                policy = Payloads.encodeJsonText(opts.get("policy"), "policy_json"); // as the client checks it
            } catch (InvalidTaskSpecException e) {
                return usage(err, e.getMessage());
            }
        }
        String ns = opts.getOrDefault("namespace", "");
        String type = opts.get("type");
        String reason = opts.get("reason");
        try (TaskringClient client = Main.security(TaskringClient.builder(), env).nodes(opts.get("nodes")).build()) {
            BlockingPolicies policies = client.blocking().policies();
            List<TypePolicy> result = switch (action) {
                case "put" -> List.of(ifRevision == null ? policies.put(ns, type, policy, reason)
                        : policies.put(ns, type, policy, reason, ifRevision));
                case "get" -> List.of(policies.get(ns, type));
                case "delete" -> List.of(ifRevision == null ? policies.delete(ns, type, reason)
                        : policies.delete(ns, type, reason, ifRevision));
                default -> policies.list(ns);
            };
            for (TypePolicy p : result) {
                out.println(JSON.writeValueAsString(toJson(p)));
            }
            return 0;
        } catch (TaskringException e) {
            // RpcException's message starts with the status code: "InvalidArgumentException: INVALID_ARGUMENT: ..."
            err.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (Exception e) {
            err.println(e);
            return 1;
        }
    }

    /** One policy as the flat JSON object every SDK's CLI prints. */
    static ObjectNode toJson(TypePolicy p) {
        ObjectNode o = JSON.createObjectNode();
        o.put("namespace", p.namespace());
        o.put("task_type", p.taskType());
        o.set("policy", p.policy());
        o.put("source", p.source());
        o.put("revision", p.revision());
        o.put("updated_by", p.updatedBy());
        o.put("updated_at", p.updatedAt().map(Instants::format).orElse(null));
        o.set("file_policy", p.filePolicy().<JsonNode>map(n -> n).orElse(JSON.nullNode()));
        return o;
    }

    private static int usage(PrintStream err, String problem) {
        err.println("taskring: " + problem);
        err.println("usage: policies put --nodes HOST:PORT --namespace NS --type T --policy JSON --reason R [--if-revision N]");
        err.println("       policies get --nodes HOST:PORT --namespace NS --type T");
        err.println("       policies delete --nodes HOST:PORT --namespace NS --type T --reason R [--if-revision N]");
        err.println("       policies list --nodes HOST:PORT [--namespace NS]");
        return 2;
    }
}
