"""The AsyncJobConfig operator: one Kubernetes resource per task type, reconciled into the
cluster's settings (the type's policy entry, its cron rules) and its Kafka topic (docs/kubernetes.md).

    python -m taskring_operator        # or the console script `taskring-operator`

Modules, one job each: spec.py (the resource's spec, parsed and checked, errors naming the field),
topics.py (the topic: created or grown, never shrunk), settings.py (the spec as a policy entry
and cron rules, registered through the API and retired), status.py (conditions and
observedGeneration), reconcile.py (the order of the steps), handlers.py (kopf's wiring),
config.py (the operator's own settings, from its environment), __main__.py (the process).
"""
