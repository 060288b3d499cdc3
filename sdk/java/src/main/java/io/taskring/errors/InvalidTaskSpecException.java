package io.taskring.errors;

/**
 * A task spec that cannot be put on the wire, caught before any call (Python raises
 * ValueError/TypeError here). Like the server's errors it names the field.
 *
 * <p>An {@link IllegalArgumentException} because that is what it is in Java; the
 * checks are only those the wire cannot carry; everything else is the server's call.
 */
public class InvalidTaskSpecException extends IllegalArgumentException {
    private final String field;
    private final String problem;

    public InvalidTaskSpecException(String field, String problem) {
        super(field + ": " + problem);
        this.field = field;
        this.problem = problem;
    }

    public String field() {
        return field;
    }

    public String problem() {
        return problem;
    }
}
