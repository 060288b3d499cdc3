"""Who is calling, and what they may do: tokens for the task API and roles for the admin endpoint."""
