"""The local world, for the tests, the benchmarks and the demo: one place for each job.

    stack       where ZooKeeper, Kafka and MariaDB of `deploy/local/stack.sh` answer
    world       a private ZooKeeper chroot, database and topic prefix, created and dropped
    processes   node and other child processes, started and stopped by PID, with their logs
    executors   SDK executors that record what they run, in this process or in a child
    clients     SDK clients to the live nodes, taken in turn (the tests' load generators)
    wait        the one wait-until-with-a-deadline
    faults      kill -9, SIGSTOP/SIGCONT, ZooKeeper session expiry, the TCP cut proxy
    ringcheck   has the ring settled
    demo        `taskring demo` (its tasks and their judgement: demo_tasks)

The layers point down: harness uses dispatcher/, cluster/, membership/ and the SDK;
nothing below imports harness (the `taskring demo` command imports it lazily).
"""
