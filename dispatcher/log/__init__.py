"""The Kafka log: the short-delay path of tasks due soon.

    interface.py  the messages and the three roles (producer, reader, intake)
    codec.py      a task attempt as a Kafka message, and back
    kafka.py      the roles on a real broker (confluent-kafka / librdkafka)
    intake.py     the thread that drives a reader and hands batches to the engine
    memory.py     in-memory twins of the producer, reader and intake, for unit tests

Both backends are held to one contract by tests/log_conformance.py.
"""
