"""The web console on every node's admin endpoint: one HTML shell, one script and one
stylesheet (static/, no build step), and the one JSON view it needs that the operations
API does not already serve (/api/live). The console reads only the bounded JSON
endpoints (ops_routes.py, /api/live, /api/stats), never the task table itself."""
