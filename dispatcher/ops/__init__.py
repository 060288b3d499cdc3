"""Operations: what a person does about tasks (dead letters, replays, search, the audit trail),
above the store and below the admin endpoint's routes and the CLI."""
