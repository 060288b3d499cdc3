"""The caller of the admin endpoint, as every operation and audit record sees it.

An Identity is what authentication produced: a name for the audit trail ("who") and a
role that decides what the caller may do. Viewers read; operators also act (replay,
edit, delete, bulk replay). The probes need neither.
"""
from __future__ import annotations

import dataclasses
import enum


class Role(enum.IntEnum):
    """Ordered: a role may do everything the roles below it may."""

    PUBLIC = 0
    """Needed by nothing but the console's shell and its static files: they carry no data, and
    a browser must load them before it can sign in."""
    VIEWER = 1
    OPERATOR = 2


@dataclasses.dataclass(frozen=True)
class Identity:
    name: str
    """Who, in the audit trail: the token's name, or `anonymous` on an open endpoint."""
    role: Role

    def may(self, needed: Role) -> bool:
        return self.role >= needed


ANONYMOUS = Identity("anonymous", Role.PUBLIC)
"""A caller not (yet) known, on a route that needs no role."""
LOCAL_OPERATOR = Identity("anonymous", Role.OPERATOR)
"""The caller of an endpoint started without any token (local use only)."""
