"""Numbered schema migrations for the task store.

Files `migrations/NNN_name.sql` are applied in order, each once, and recorded in
`schema_migrations`. Statements are separated by `;` at the end of a line.
Run it as `python -m dispatcher.store.migrate [--host H] [--port N] [--user U] [--database D]`;
each defaults to the node's TASKRING_MYSQL_* variable, and the password is read
only from TASKRING_MYSQL_PASSWORD (never from the command line). When the store is
split by slot (TASKRING_MYSQL_SHARDS), every shard is migrated, shard 0 first.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re

import pymysql

from dispatcher.base.config import MySQLConfig, parse_mysql_shards

MIGRATIONS_DIR = pathlib.Path(__file__).with_name("migrations")
_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


def migration_files() -> list[pathlib.Path]:
    matches = sorted(((p, m) for p in MIGRATIONS_DIR.iterdir() if (m := _NAME.match(p.name))), key=lambda pm: pm[0])
    files = [p for p, _ in matches]
    numbers = [int(m.group(1)) for _, m in matches]
    if numbers != list(range(1, len(files) + 1)):
        raise RuntimeError(f"migrations must be numbered 001.. without gaps, found {numbers}")
    return files


def _statements(sql: str) -> list[str]:
    body = "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in re.split(r";\s*$", body, flags=re.M) if s.strip()]


def migrate(conn: pymysql.connections.Connection, database: str) -> list[str]:
    """Create `database` if needed and apply pending migrations; returns the names applied."""
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4")
        cur.execute(f"USE `{database}`")
        cur.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INT UNSIGNED PRIMARY KEY, name VARCHAR(255) NOT NULL,"
            " applied_at DATETIME(3) NOT NULL)"
        )
        cur.execute("SELECT version FROM schema_migrations")
        done = {row[0] for row in cur.fetchall()}
    applied = []
    for path in migration_files():
        version = int(path.name[:3])
        if version in done:
            continue
        with conn.cursor() as cur:
            # DDL commits implicitly in MySQL, so a migration is not atomic; each
            # file is kept to CREATE/ALTER statements that are safe to re-run by hand.
            for statement in _statements(path.read_text()):
                cur.execute(statement)
            cur.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, UTC_TIMESTAMP(3))",
                (version, path.name),
            )
        conn.commit()
        applied.append(path.name)
    return applied


def main(argv: list[str] | None = None) -> None:
    env = os.environ
    defaults = MySQLConfig()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=env.get("TASKRING_MYSQL_HOST", defaults.host))
    parser.add_argument("--port", type=int, default=int(env.get("TASKRING_MYSQL_PORT", defaults.port)))
    parser.add_argument("--user", default=env.get("TASKRING_MYSQL_USER", "root"))
    parser.add_argument("--database", default=env.get("TASKRING_MYSQL_DATABASE", "taskring"))
    args = parser.parse_args(argv)
    password = env.get("TASKRING_MYSQL_PASSWORD", "")
    shard0 = MySQLConfig(host=args.host, port=args.port, user=args.user, password=password, database=args.database)
    shards = (shard0, *parse_mysql_shards(env.get("TASKRING_MYSQL_SHARDS", ""), shard0))
    for index, shard in enumerate(shards):
        conn = pymysql.connect(host=shard.host, port=shard.port, user=shard.user, password=shard.password,
                               autocommit=False, connect_timeout=10)
        try:
            applied = migrate(conn, shard.database)
        finally:
            conn.close()
        where = f"shard {index} ({shard.host}:{shard.port}) " if len(shards) > 1 else ""
        print(f"{where}database {shard.database}: applied {applied or 'nothing (up to date)'}")

if __name__ == "__main__":
    main()
