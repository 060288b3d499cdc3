package io.taskring.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Instants;
import io.taskring.TaskState;
import io.taskring.client.BlockingCronRules;
import io.taskring.client.CronRuleInfo;
import io.taskring.client.CronRuleSpec;
import io.taskring.client.TaskringClient;
import io.taskring.errors.InvalidTaskSpecException;
import io.taskring.errors.TaskringException;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code Main cron ...}: cron rules from the shell, the same command in every SDK's CLI (the
 * cross-language test, tests/integration/test_sdk_cron.py, runs them all):
 *
 * <pre>
 *   cron create|update --nodes HOST:PORT --namespace NS --name NAME --type T --schedule S
 *                      [--zone Z] [--payload JSON] [--owner-team X] [--description X]
 *                      [--catch-up P] [--catch-up-limit N] [--overlap P]
 *                      [--on-repeated-hour P] [--on-skipped-hour P] [--timeout-ms N] [--max-retries N]
 *   cron get|pause|resume|delete --nodes HOST:PORT --namespace NS --name NAME
 *   cron list --nodes HOST:PORT [--namespace NS]
 * </pre>
 *
 * <p>One JSON object per rule and line, in the Python shell's names ({@code dispatcher/cron/cli.py}),
 * flat: times RFC 3339 or null, {@code payload} the object itself, {@code timeout_ms} and
 * {@code max_retries} null when unset. Here {@code --timeout-ms} is the rule's (its fire
 * tasks'), not the RPC's as in the other modes: the RPC keeps the 10 s default.
 */
final class CronCommand {
    private static final Set<String> REF = Set.of("nodes", "namespace", "name");
    private static final Set<String> PUT = Set.of("nodes", "namespace", "name", "type", "schedule", "zone", "payload",
            "owner-team", "description", "catch-up", "catch-up-limit", "overlap", "on-repeated-hour",
            "on-skipped-hour", "timeout-ms", "max-retries");
    private static final Set<String> LIST = Set.of("nodes", "namespace");
    private static final ObjectMapper JSON = new ObjectMapper();

    private CronCommand() {}

    /** {@code args} without the leading "cron". Exit status as {@link Main}: 0, 1 refused, 2 usage. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (args.length < 1) {
            return usage(err, "give an action: create, update, get, list, pause, resume or delete");
        }
        String action = args[0];
        Set<String> allowed = switch (action) {
            case "create", "update" -> PUT;
            case "get", "pause", "resume", "delete" -> REF;
            case "list" -> LIST;
            default -> null;
        };
        if (allowed == null) {
            return usage(err, "unknown action " + action + ": create, update, get, list, pause, resume or delete");
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String key = args[i].startsWith("--") ? args[i].substring(2) : null;
            if (key == null || !allowed.contains(key) || i + 1 >= args.length) {
                return usage(err, "unexpected argument " + args[i] + " for cron " + action);
            }
            opts.put(key, args[++i]);
        }
        List<String> required = switch (action) {
            case "create", "update" -> List.of("nodes", "namespace", "name", "type", "schedule");
            case "list" -> List.of("nodes");
            default -> List.of("nodes", "namespace", "name");
        };
        for (String r : required) {
            if (!opts.containsKey(r)) {
                return usage(err, "cron " + action + " needs --" + String.join(", --", required));
            }
        }
        CronRuleSpec spec = null;
        if (allowed == PUT) {
            try {
                spec = spec(opts);
            } catch (NumberFormatException e) {
                return usage(err, "not a number: " + e.getMessage());
            } catch (InvalidTaskSpecException e) {
                return usage(err, e.getMessage());
            }
        }
        String ns = opts.getOrDefault("namespace", "");
        String name = opts.get("name");
        try (TaskringClient client = Main.security(TaskringClient.builder(), env).nodes(opts.get("nodes")).build()) {
            BlockingCronRules cron = client.blocking().cron();
            List<CronRuleInfo> rules = switch (action) {
                case "create" -> List.of(cron.create(spec));
                case "update" -> List.of(cron.update(spec));
                case "get" -> List.of(cron.get(ns, name));
                case "pause" -> List.of(cron.pause(ns, name));
                case "resume" -> List.of(cron.resume(ns, name));
                case "delete" -> List.of(cron.delete(ns, name));
                default -> cron.list(ns);
            };
            for (CronRuleInfo rule : rules) {
                out.println(JSON.writeValueAsString(toJson(rule)));
            }
            return 0;
        } catch (TaskringException e) {
            // RpcException's message starts with the status code: "AlreadyExistsException: ALREADY_EXISTS: ..."
            err.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (Exception e) {
            err.println(e);
            return 1;
        }
    }

    /** The rule of create/update's options; unset options are the server's defaults. */
    static CronRuleSpec spec(Map<String, String> opts) {
        CronRuleSpec.Builder b = CronRuleSpec.builder(opts.get("namespace"), opts.get("name"), opts.get("type"),
                        opts.get("schedule"))
                .timeZone(opts.getOrDefault("zone", ""))
                .payloadJson(opts.getOrDefault("payload", "{}"))
                .ownerTeam(opts.getOrDefault("owner-team", ""))
                .description(opts.getOrDefault("description", ""))
                .catchUp(opts.getOrDefault("catch-up", ""))
                .catchUpLimit(Long.parseLong(opts.getOrDefault("catch-up-limit", "0")))
                .overlap(opts.getOrDefault("overlap", ""))
                .onRepeatedHour(opts.getOrDefault("on-repeated-hour", ""))
                .onSkippedHour(opts.getOrDefault("on-skipped-hour", ""));
        if (opts.containsKey("timeout-ms")) {
            b.timeout(Duration.ofMillis(Long.parseLong(opts.get("timeout-ms"))));
        }
        if (opts.containsKey("max-retries")) {
            b.maxRetries(Integer.parseInt(opts.get("max-retries")));
        }
        return b.build();
    }

    /** One rule as the flat JSON object every SDK's CLI prints. */
    static ObjectNode toJson(CronRuleInfo info) {
        CronRuleSpec s = info.spec();
        ObjectNode o = JSON.createObjectNode();
        o.put("namespace", s.namespace());
        o.put("name", s.name());
        o.put("task_type", s.taskType());
        o.put("schedule", s.schedule());
        o.put("time_zone", s.timeZone());
        o.set("payload", s.payload());
        o.put("on_repeated_hour", s.onRepeatedHour());
        o.put("on_skipped_hour", s.onSkippedHour());
        o.put("catch_up", s.catchUp());
        o.put("catch_up_limit", s.catchUpLimit());
        o.put("overlap", s.overlap());
        o.put("owner_team", s.ownerTeam());
        o.put("description", s.description());
        o.put("timeout_ms", s.timeout().map(Duration::toMillis).orElse(null));
        o.put("max_retries", s.maxRetries().orElse(null));
        o.put("paused", info.paused());
        putTime(o, "next_fire_time", info.nextFireTime());
        putTime(o, "last_fire_time", info.lastFireTime());
        putTime(o, "created_at", info.createdAt());
        putTime(o, "updated_at", info.updatedAt());
        o.put("last_fire_task_id", info.lastFireTaskId());
        o.put("last_fire_state", info.lastFireState().map(TaskState::wireName).orElse(null));
        return o;
    }

    private static void putTime(ObjectNode o, String key, Optional<Instant> t) {
        o.put(key, t.map(Instants::format).orElse(null));
    }

    private static int usage(PrintStream err, String problem) {
        err.println("taskring: " + problem);
        err.println("usage: cron create|update --nodes HOST:PORT --namespace NS --name NAME --type T --schedule S");
        err.println("                          [--zone Z] [--payload JSON] [--owner-team X] [--description X]");
        err.println("                          [--catch-up P] [--catch-up-limit N] [--overlap P]");
        err.println("                          [--on-repeated-hour P] [--on-skipped-hour P] [--timeout-ms N] [--max-retries N]");
        err.println("       cron get|pause|resume|delete --nodes HOST:PORT --namespace NS --name NAME");
        err.println("       cron list --nodes HOST:PORT [--namespace NS]");
        return 2;
    }
}
