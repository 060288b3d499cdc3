package io.taskring.executor;

/** A registered handler: exactly one of the two is set. */
record Handler(TaskHandler sync, AsyncTaskHandler async) {
    static Handler of(TaskHandler h) {
        return new Handler(h, null);
    }

    static Handler of(AsyncTaskHandler h) {
        return new Handler(null, h);
    }

    /** The table key: handlers are registered per namespace and task type. */
    static String key(String namespace, String taskType) {
        return namespace + "/" + taskType;
    }
}
