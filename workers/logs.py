"""Structured logs: structlog renders ``key=value`` lines through the standard ``logging`` module,
so Celery's handlers, levels and redirection apply to them (and they are not mistaken for stdout)."""

from __future__ import annotations

import logging

import structlog


def configure_logging(level: str | int = "INFO") -> None:
    """Route structlog through ``logging`` with ``key=value`` rendering; idempotent."""
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["event", "level"], sort_keys=True),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    else:
        root.setLevel(level)
