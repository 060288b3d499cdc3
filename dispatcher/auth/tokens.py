"""The tokens file: who may call the task API, on which namespaces, and the admin endpoint.

The file (TASKRING_TOKENS_FILE; JSON, or YAML when it ends in .yaml/.yml and PyYAML is
installed) holds only the sha256 of each secret, so a copy of it lets nobody in:

    {"tokens": [
      {"name": "billing-api", "sha256": "<64 hex digits>",
       "namespaces": ["billing"], "calls": ["submit", "read"]},
      {"name": "sre-alice", "sha256": "...", "namespaces": "*", "calls": "*",
       "admin_role": "operator"}
    ]}

Make a token with `python -m dispatcher.auth.tokens new --name NAME --namespaces a,b
--calls submit,cancel,read [--admin-role viewer|operator]`: it prints the secret once (give
it to the caller) and the entry for the file. Every problem in a file is an error naming
the field (`tokens[2].calls[1]: ...`), raised at start: a node never serves with half a file.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import hmac
import json
import re
import secrets
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from dispatcher.auth.identity import Role

SUBMIT, CANCEL, READ, CRON_WRITE, POLICY_WRITE = "submit", "cancel", "read", "cron_write", "policy_write"
CALLS = (SUBMIT, CANCEL, READ, CRON_WRITE, POLICY_WRITE)
"""What a token may be allowed, each a set of RPCs: submit = Submit, SubmitBatch, SubmitGraph, AddGraphTasks; cancel =
Cancel, CancelGraph; read = GetTask, GetCronRule, ListCronRules, GetTypePolicy, ListTypePolicies, GetGraph;
cron_write = Create/Update/Delete/Pause/ResumeCronRule; policy_write = Put/DeleteTypePolicy."""

CALL_OF_RPC = {
    "Submit": SUBMIT, "SubmitBatch": SUBMIT, "Cancel": CANCEL, "GetTask": READ,
    "GetCronRule": READ, "ListCronRules": READ,
    "CreateCronRule": CRON_WRITE, "UpdateCronRule": CRON_WRITE, "DeleteCronRule": CRON_WRITE,
    "PauseCronRule": CRON_WRITE, "ResumeCronRule": CRON_WRITE,
    "GetTypePolicy": READ, "ListTypePolicies": READ, "PutTypePolicy": POLICY_WRITE, "DeleteTypePolicy": POLICY_WRITE,
    "SubmitGraph": SUBMIT, "GetGraph": READ, "CancelGraph": CANCEL, "AddGraphTasks": SUBMIT,
}
"""The call each RPC of TaskService, CronService, PolicyService and GraphService needs."""

ANY = "*"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,63}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FIELDS = {"name", "sha256", "namespaces", "calls", "admin_role"}
_ROLES = {"viewer": Role.VIEWER, "operator": Role.OPERATOR}


class TokensFileError(ValueError):
    """A tokens file that cannot be used, naming the field."""

    def __init__(self, source: str, field: str, problem: str):
        self.source, self.field, self.problem = source, field, problem
        super().__init__(f"{source}: {field}: {problem}")


def digest_of(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


@dataclasses.dataclass(frozen=True)
class Token:
    name: str
    """Who, in denials, logs and the admin audit trail (never the secret)."""
    digest: bytes = dataclasses.field(repr=False)
    """sha256 of the secret."""
    namespaces: frozenset[str] | None
    """None: every namespace ("*")."""
    calls: frozenset[str]
    admin_role: Role | None = None
    """The role on the admin endpoint; None: no access to it."""

    def may_call(self, call: str) -> bool:
        return call in self.calls

    def may_use(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces


class TokenLookup(Protocol):
    """What the access checks need of the tokens: a TokenSet, or one that follows its file
    (dispatcher/auth/reload.py)."""

    @property
    def tokens(self) -> Sequence[Token]: ...

    def find(self, secret: str) -> Token | None: ...


class TokenSet:
    """The tokens of one file, looked up by the digest of a presented secret."""

    def __init__(self, tokens: Sequence[Token]):
        self.tokens = tuple(tokens)
        self._by_digest = {t.digest: t for t in self.tokens}

    def __len__(self) -> int:
        return len(self.tokens)

    def find(self, secret: str) -> Token | None:
        """The token of `secret`, or None. One sha256 and one dict lookup: the dict is keyed by
        digests, so its timing says nothing usable about a secret; the compare_digest after
        it keeps the final comparison constant-time all the same."""
        digest = digest_of(secret)
        token = self._by_digest.get(digest)
        if token is not None and hmac.compare_digest(token.digest, digest):
            return token
        return None


def parse_tokens(data: object, source: str = "tokens file") -> TokenSet:
    """A TokenSet from the file's parsed contents; TokensFileError naming the field otherwise."""
    if not isinstance(data, Mapping) or set(data) != {"tokens"}:
        raise TokensFileError(source, "tokens", 'the file must be an object with one key, "tokens"')
    items = data["tokens"]
    if not isinstance(items, list):
        raise TokensFileError(source, "tokens", "must be a list")
    tokens: list[Token] = []
    names: set[str] = set()
    digests: set[bytes] = set()
    for i, item in enumerate(items):
        token = _token(item, f"tokens[{i}]", source)
        if token.name in names:
            raise TokensFileError(source, f"tokens[{i}].name", f"{token.name!r} is used twice")
        if token.digest in digests:
            raise TokensFileError(source, f"tokens[{i}].sha256", "is the hash of another token's secret")
        names.add(token.name)
        digests.add(token.digest)
        tokens.append(token)
    return TokenSet(tokens)


def _token(item: object, at: str, source: str) -> Token:
    def fail(field: str, problem: str) -> TokensFileError:
        return TokensFileError(source, f"{at}.{field}" if field else at, problem)

    if not isinstance(item, Mapping):
        raise fail("", "must be an object")
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise fail(str(unknown[0]), f"is not a field of a token (the fields: {', '.join(sorted(_FIELDS))})")
    for field in ("name", "sha256"):
        if field not in item:
            raise fail(field, "is required")
    name, sha = item["name"], item["sha256"]
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise fail("name", "must be 1-64 letters, digits or ._@:- (starting with a letter or digit)")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise fail("sha256", "must be the sha256 of the secret, 64 lowercase hex digits (the file never"
                             " holds a secret itself)")
    namespaces = _names(item.get("namespaces", []), "namespaces", fail, allowed=None)
    listed = _names(item.get("calls", []), "calls", fail, allowed=CALLS)
    calls = frozenset(CALLS) if listed is None else listed
    role = item.get("admin_role")
    if role is not None and role not in _ROLES:
        raise fail("admin_role", f"must be one of {', '.join(_ROLES)}, got {role!r}")
    admin_role = _ROLES[role] if role is not None else None
    if not calls and admin_role is None:
        raise fail("calls", "grants nothing: give calls, an admin_role, or both")
    if calls and namespaces == frozenset():
        raise fail("namespaces", 'is required with calls: a list of namespaces, or "*"')
    return Token(name=name, digest=bytes.fromhex(sha), namespaces=namespaces,
                 calls=calls, admin_role=admin_role)


def _names(value: object, field: str, fail, allowed: Sequence[str] | None) -> frozenset[str] | None:
    """A list of names, or "*" (None: all of them)."""
    if value == ANY:
        return None
    if not isinstance(value, list):
        raise fail(field, 'must be a list or "*"')
    for j, v in enumerate(value):
        if not isinstance(v, str) or not v:
            raise fail(f"{field}[{j}]", "must be a non-empty string")
        if v == ANY:
            raise fail(f"{field}[{j}]", f'"*" stands alone ({field}: "*"), not in a list')
        if allowed is not None and v not in allowed:
            raise fail(f"{field}[{j}]", f"{v!r} is not a call (the calls: {', '.join(allowed)})")
    return frozenset(value)


def load_tokens(path: str | Path) -> TokenSet:
    """Read and parse a tokens file (JSON; YAML by its suffix)."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TokensFileError(source, "file", f"cannot be read: {exc.strerror or exc}") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise TokensFileError(source, "file", "is YAML, and PyYAML is not installed: use JSON") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise TokensFileError(source, "file", f"is not YAML: {exc}") from None
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TokensFileError(source, "file", f"is not JSON: {exc}") from None
    return parse_tokens(data, source)


def new_token(name: str, namespaces: Sequence[str] | str, calls: Sequence[str] | str,
              admin_role: str | None = None) -> tuple[str, dict]:
    """A fresh secret and the file's entry for it (checked as the file would be)."""
    secret = "trk_" + secrets.token_urlsafe(32)
    entry: dict = {"name": name, "sha256": hashlib.sha256(secret.encode()).hexdigest()}
    if namespaces:  # an admin-only token has neither
        entry["namespaces"] = namespaces if namespaces == ANY else list(namespaces)
    if calls:
        entry["calls"] = calls if calls == ANY else list(calls)
    if admin_role is not None:
        entry["admin_role"] = admin_role
    parse_tokens({"tokens": [entry]}, "the new token")
    return secret, entry


def _list(text: str) -> list[str] | str:
    return ANY if text.strip() == ANY else [p.strip() for p in text.split(",") if p.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dispatcher.auth.tokens", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="make a token: print its secret once, and its entry for the tokens file")
    new.add_argument("--name", required=True)
    new.add_argument("--namespaces", default="", help='a,b or "*"')
    new.add_argument("--calls", default="", help=f'some of {",".join(CALLS)}, or "*"')
    new.add_argument("--admin-role", choices=sorted(_ROLES))
    args = parser.parse_args(argv)
    try:
        secret, entry = new_token(args.name, _list(args.namespaces), _list(args.calls), args.admin_role)
    except TokensFileError as exc:
        print(f"error: {exc.field.removeprefix('tokens[0].')}: {exc.problem}", file=sys.stderr)
        return 2
    print(f"secret (shown once; give it to the caller, keep it out of the repo):\n  {secret}")
    print("entry for the tokens file's \"tokens\" list:")
    print("  " + json.dumps(entry))
    return 0


if __name__ == "__main__":
    sys.exit(main())
