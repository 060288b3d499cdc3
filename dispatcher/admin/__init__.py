"""The node's admin side: the HTTP endpoint for SREs and probes (server.py), the
cluster-wide ring view it serves (ring_view.py), and `taskring ring`, which prints
that view in a terminal (ring_cli.py)."""
