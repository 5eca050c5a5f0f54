"""One Redis URL for the workqueue, the Celery broker and RedBeat, with or without Sentinel.

``RECONCILERY_REDIS_URL`` takes either a plain URL (``redis://``, ``rediss://``, ``unix://``) or a
list of Sentinels separated by ``;``::

    sentinel://[:PASSWORD@]HOST:PORT[/DB][?master_name=NAME];sentinel://HOST:PORT;...

- the *master name* comes from the URL's ``master_name`` query parameter, else
  ``RECONCILERY_REDIS_MASTER_NAME``, else ``mymaster`` (Redis' own default);
- the *password* (``requirepass`` of the master and replicas) comes from the URL, else
  ``RECONCILERY_REDIS_PASSWORD`` (so a Kubernetes Secret can hold it while the URL sits in a
  ConfigMap); this applies to plain URLs too. Sentinels that require a password of their own get
  ``RECONCILERY_REDIS_SENTINEL_PASSWORD``;
- the *ACL user* comes from the URL, else ``RECONCILERY_REDIS_USERNAME`` (none: Redis' ``default``);
- the *database* is the path of the first Sentinel URL (default 0).

:func:`redis_client` gives a ``redis.Redis`` (for Sentinel: ``Sentinel.master_for``, which finds the
current master on every new connection and drops a connection to a demoted one), with retries on
connection errors long enough to ride out a failover. :func:`celery_broker_settings` and
:func:`redbeat_settings` give the matching Celery and RedBeat configuration (kombu's
``sentinel://`` transport with ``master_name``; RedBeat's ``redis-sentinel`` options).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redis.sentinel import Sentinel

from workers.settings import EngineSettings, current

DEFAULT_MASTER_NAME = "mymaster"
#: Retries of one command on a connection error: with the backoff below about 12 s in total, longer
#: than a Sentinel failover with ``down-after-milliseconds`` 5000 (the deploy/ default) takes.
RETRIES = 14
_BACKOFF = ExponentialBackoff(cap=1.0, base=0.05)
_RETRY_ON = [RedisConnectionError, RedisTimeoutError, ReadOnlyError]

#: broker URL (no query string: kombu refuses unknown parameters) -> master name of the URL it
#: came from, so that a client built from ``app.conf.broker_url`` finds the same master.
_MASTER_OF_BROKER_URL: dict[str, str] = {}


@dataclass(frozen=True)
class RedisTarget:
    """A parsed ``RECONCILERY_REDIS_URL``.

    Attributes:
        url: a plain URL as given, or the first Sentinel URL (for Sentinel).
        sentinels: ``(host, port)`` of each Sentinel; empty for a plain URL.
        master_name: the Sentinel master name (unused for a plain URL).
        password: the Redis password (URL first, then ``RECONCILERY_REDIS_PASSWORD``), or ``None``.
        username: the ACL user from the URL, then ``RECONCILERY_REDIS_USERNAME`` (a component's own
            user: deploy/ gives the listener and Flower users of their own), or ``None``.
        db: the database number.
        sentinel_password: ``RECONCILERY_REDIS_SENTINEL_PASSWORD``, or ``None``.
    """

    url: str
    sentinels: tuple[tuple[str, int], ...]
    master_name: str
    password: str | None
    username: str | None
    db: int
    sentinel_password: str | None = None

    @property
    def is_sentinel(self) -> bool:
        return bool(self.sentinels)


def parse_redis_url(url: str, environ: Mapping[str, str] | None = None) -> RedisTarget:
    """Parse ``url`` (see the module doc). Raises ``ValueError`` for a Sentinel list with a URL of
    another scheme, a Sentinel without host or a database that is not a number."""
    env = current() if environ is None else EngineSettings.load(environ)
    env_password = env.redis_password or None
    env_username = env.redis_username or None
    sentinel_password = env.redis_sentinel_password or None
    parts = [p.strip() for p in url.split(";") if p.strip()]
    if not parts:
        raise ValueError("empty Redis URL")
    first = urlsplit(parts[0])
    if first.scheme != "sentinel":
        if len(parts) > 1:
            raise ValueError(f"only sentinel:// URLs can be listed with ';', got {url!r}")
        db = (parse_qs(first.query).get("db") or ["0"])[0] if first.scheme == "unix" else first.path
        return RedisTarget(url=url, sentinels=(), master_name="", db=_db(db, url),
                           password=unquote(first.password) if first.password else env_password,
                           username=unquote(first.username) if first.username else env_username)
    sentinels: list[tuple[str, int]] = []
    master = ""
    for part in parts:
        split = urlsplit(part)
        if split.scheme != "sentinel" or not split.hostname:
            raise ValueError(f"expected sentinel://HOST:PORT in a Sentinel list, got {part!r}")
        sentinels.append((split.hostname, split.port or 26379))
        master = master or (parse_qs(split.query).get("master_name") or [""])[0]
    broker_master = _MASTER_OF_BROKER_URL.get(url, "")
    return RedisTarget(
        url=parts[0], sentinels=tuple(sentinels),
        master_name=master or broker_master or env.redis_master_name or DEFAULT_MASTER_NAME,
        password=unquote(first.password) if first.password else env_password,
        username=unquote(first.username) if first.username else env_username,
        db=_db(first.path, url), sentinel_password=sentinel_password)


def _db(path: str, url: str) -> int:
    raw = path.strip("/")
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"Redis database must be a number, got {raw!r} in {url!r}") from None


def redis_client(url: str, environ: Mapping[str, str] | None = None, **kwargs: Any) -> redis.Redis:
    """A ``redis.Redis`` for ``url`` (plain or Sentinel; see the module doc). ``kwargs`` go to the
    client (e.g. ``decode_responses=True``, ``socket_timeout``). Commands are retried on connection
    errors (:data:`RETRIES`, exponential backoff to 1 s), so a failover or a Redis restart shows as a
    few seconds of latency instead of an error. Raises ``ValueError`` for a malformed URL."""
    target = parse_redis_url(url, environ)
    options: dict[str, Any] = {"retry": Retry(_BACKOFF, RETRIES), "retry_on_error": list(_RETRY_ON),
                               "socket_connect_timeout": 5.0, "socket_keepalive": True,
                               "health_check_interval": 30, **kwargs}
    if not target.is_sentinel:
        if target.password is not None:
            options.setdefault("password", target.password)  # a password in the URL wins anyway
        return redis.Redis.from_url(url, **options)
    sentinel = Sentinel(list(target.sentinels), sentinel_kwargs=_sentinel_kwargs(target),
                        socket_connect_timeout=options["socket_connect_timeout"])
    return sentinel.master_for(target.master_name, redis_class=redis.Redis, db=target.db,
                               password=target.password, username=target.username, **options)


def _sentinel_kwargs(target: RedisTarget) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"socket_connect_timeout": 5.0, "socket_timeout": 5.0}
    if target.sentinel_password:
        kwargs["password"] = target.sentinel_password
    return kwargs


def _with_password(url: str, password: str | None, username: str | None) -> str:
    """``url`` with ``[username]:password@`` in its netloc (unchanged when it has one or none is given)."""
    split = urlsplit(url)
    if password is None or split.password:
        return url
    host = split.netloc.rsplit("@", 1)[-1]
    userinfo = f"{quote(username or '', safe='')}:{quote(password, safe='')}"
    return urlunsplit((split.scheme, f"{userinfo}@{host}", split.path, split.query, split.fragment))


def _without_credentials(url: str) -> str:
    """``url`` without ``user:password@`` in its netloc."""
    split = urlsplit(url)
    host = split.netloc.rpartition("@")[2]
    return urlunsplit(split._replace(netloc=host))


def celery_broker_settings(url: str, transport_options: Mapping[str, Any] | None = None,
                           environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"broker_url": ..., "broker_transport_options": ...}`` for Celery on ``url``.

    ``transport_options`` (visibility timeout, priorities, ...) are kept; for Sentinel the broker URL
    is kombu's ``sentinel://[:PASSWORD@]HOST:PORT/DB;sentinel://HOST:PORT...`` and the options get
    ``master_name`` (and ``sentinel_kwargs`` when the Sentinels need a password). A password from
    ``RECONCILERY_REDIS_PASSWORD`` is put into the broker URL (kombu reads it from there only)."""
    target = parse_redis_url(url, environ)
    options = dict(transport_options or {})
    if not target.is_sentinel:
        return {"broker_url": _with_password(url, target.password, target.username),
                "broker_transport_options": options}
    db = f"/{target.db}"
    hosts = [f"sentinel://{host}:{port}{db}" for host, port in target.sentinels]
    hosts[0] = _with_password(hosts[0], target.password, target.username)
    broker_url = ";".join(hosts)
    _MASTER_OF_BROKER_URL[broker_url] = target.master_name
    options["master_name"] = target.master_name
    if target.sentinel_password:
        options["sentinel_kwargs"] = {"password": target.sentinel_password}
    return {"broker_url": broker_url, "broker_transport_options": options}


def redbeat_settings(url: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"redbeat_redis_url": ..., "redbeat_redis_options": ...}`` for RedBeat on ``url``: the URL
    without its credentials and the ``password`` (``username``) as options, or RedBeat's Sentinel form
    (``redis-sentinel://`` plus ``sentinels``/``service_name``/``password``/``db`` options).

    The password is never in ``redbeat_redis_url``: Celery masks only settings whose names look
    secret (and nested ``password`` keys), not that URL, so Flower's config view would show it."""
    target = parse_redis_url(url, environ)
    if not target.is_sentinel:
        credentials: dict[str, Any] = {}
        if target.password is not None:
            credentials["password"] = target.password
        if target.username is not None:
            credentials["username"] = target.username
        return {"redbeat_redis_url": _without_credentials(url), "redbeat_redis_options": credentials}
    options: dict[str, Any] = {"sentinels": list(target.sentinels),
                               "service_name": target.master_name, "db": target.db,
                               "socket_timeout": 5.0, "retry_period": 60}
    if target.password is not None:
        options["password"] = target.password
    if target.username is not None:
        options["username"] = target.username
    if target.sentinel_password:
        options["sentinel_kwargs"] = {"password": target.sentinel_password}
    host, port = target.sentinels[0]
    return {"redbeat_redis_url": f"redis-sentinel://{host}:{port}/{target.db}", "redbeat_redis_options": options}


__all__ = ["DEFAULT_MASTER_NAME", "RedisTarget", "celery_broker_settings", "parse_redis_url", "redbeat_settings",
           "redis_client"]
