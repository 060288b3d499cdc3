package io.taskring.errors;

/**
 * A graph that the builder refuses before any call (a repeated key, a dependency on a task not
 * added before), naming the field as the server would: {@code tasks[1].key},
 * {@code tasks[2].depends_on[0]}. Everything else (names, join rules against the number of
 * parents, the tasks' own fields) is the server's call, answered with an
 * {@link InvalidArgumentException} naming the field the same way.
 */
public class InvalidGraphException extends InvalidTaskSpecException {
    public InvalidGraphException(String field, String problem) {
        super(field, problem);
    }
}
