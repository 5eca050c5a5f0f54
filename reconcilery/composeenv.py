"""``reconcilery compose-env``: the ``.env`` that docker-compose.yml needs, with random passwords.

docker-compose.yml requires four passwords (``${VAR:?...}``): Redis' own, its ``listener`` and
``flower`` ACL users', and Flower's basic auth. Compose reads ``.env`` beside the compose file, so one
command writes them and ``docker compose up`` starts without typing any (deploy/compose/README.md).
The file is created with mode 0600 and never overwritten unless asked (``force``): replacing the
passwords of a Redis that persisted its data under the old ones locks its clients out.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

#: The variables docker-compose.yml requires, with the bytes of randomness of each (hex: twice as many
#: characters) and what it protects.
PASSWORDS: dict[str, tuple[int, str]] = {
    "RECONCILERY_REDIS_PASSWORD": (24, "Redis requirepass: the engine's processes"),
    "RECONCILERY_REDIS_LISTENER_PASSWORD": (24, "Redis ACL user `listener` (skr-listener)"),
    "RECONCILERY_REDIS_FLOWER_PASSWORD": (24, "Redis ACL user `flower` (Flower)"),
    "RECONCILERY_FLOWER_PASSWORD": (16, "Flower's basic auth, user admin"),
}


def env_text(token: Callable[[int], str] = secrets.token_hex) -> str:
    """The ``.env`` content: a comment and ``NAME=value`` per :data:`PASSWORDS` entry, each value
    ``token(nbytes)`` (default: :func:`secrets.token_hex`; hex needs no quoting in compose or a shell)."""
    lines = ["# Written by `reconcilery compose-env`: the passwords docker-compose.yml requires. Never commit it."]
    for name, (nbytes, what) in PASSWORDS.items():
        lines += [f"# {what}", f"{name}={token(nbytes)}"]
    return "\n".join(lines) + "\n"


class EnvExists(FileExistsError):
    """The ``.env`` exists and ``force`` was not given."""


def write_env(path: Path, force: bool = False, text: str | None = None) -> Path:
    """Write ``text`` (default :func:`env_text`) to ``path`` with mode 0600 (the file is created with it:
    no moment where others may read it). Raises :class:`EnvExists` when ``path`` exists and not
    ``force``; with ``force`` the old file is replaced (its mode too)."""
    content = env_text() if text is None else text
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise EnvExists(f"{path} exists; --force replaces it (and its passwords)") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)  # an existing file replaced with --force keeps no wider mode
        f.write(content)
    return path


__all__ = ["PASSWORDS", "EnvExists", "env_text", "write_env"]
