"""What tells a followed file changed: its (inode, size, mtime). A Kubernetes Secret or
ConfigMap volume swaps a symlink, which changes the inode, so a stat is enough."""
from __future__ import annotations

import os


def file_stamp(path: str) -> tuple[int, int, int] | None:
    """None when the file cannot be read (then any readable version is a change)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
