"""Who calls the admin endpoint: the tokens file's tokens with an admin_role, and the
single TASKRING_ADMIN_TOKEN (an operator named "admin"). With neither configured the
endpoint stays open to a local operator, as before (admin/server.token_authenticator)."""
from __future__ import annotations

import hmac

from dispatcher.admin.server import Authenticate, Headers, bearer_token, token_authenticator
from dispatcher.auth.identity import Identity, Role
from dispatcher.auth.tokens import TokenSet


def admin_authenticator(tokens: TokenSet | None, admin_token: str | None) -> Authenticate:
    if tokens is None:
        return token_authenticator(admin_token)
    identities = {t.digest: Identity(t.name, t.admin_role) for t in tokens.tokens if t.admin_role is not None}

    def authenticate(headers: Headers, query: dict[str, list[str]]) -> Identity | None:
        given = bearer_token(headers, query)
        if given is None:
            return None
        if admin_token is not None and hmac.compare_digest(given.encode(), admin_token.encode()):
            return Identity("admin", Role.OPERATOR)
        token = tokens.find(given)
        # A token of the task API without an admin_role is not known here (401).
        return identities.get(token.digest) if token is not None else None
    return authenticate
