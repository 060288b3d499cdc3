"""Who calls the admin endpoint: the tokens file's tokens with an admin_role, and the
single TASKRING_ADMIN_TOKEN (an operator named "admin"). With neither configured the
endpoint stays open to a local operator, as before (admin/server.token_authenticator)."""
from __future__ import annotations

import hmac

from dispatcher.admin.server import Authenticate, Headers, bearer_token, token_authenticator
from dispatcher.auth.identity import Identity, Role
from dispatcher.auth.tokens import TokenLookup


def admin_authenticator(tokens: TokenLookup | None, admin_token: str | None) -> Authenticate:
    if tokens is None:
        return token_authenticator(admin_token)

    def authenticate(headers: Headers, query: dict[str, list[str]]) -> Identity | None:
        given = bearer_token(headers, query)
        if given is None:
            return None
        if admin_token is not None and hmac.compare_digest(given.encode(), admin_token.encode()):
            return Identity("admin", Role.OPERATOR)
        # Looked up at each call: the tokens may have been read again since (auth/reload.py).
        token = tokens.find(given)
        # A token of the task API without an admin_role is not known here (401).
        if token is None or token.admin_role is None:
            return None
        return Identity(token.name, token.admin_role)
    return authenticate
