"""The one settings loader (see :mod:`config.loader`); the lowest layer, importing nothing of ours."""

from config.loader import (
    FLAG_NO,
    FLAG_YES,
    Cached,
    Flag,
    Json,
    Port,
    Seconds,
    Settings,
    SettingsError,
    cached,
    flag,
    reset,
    settings_classes,
    validate,
)

__all__ = ["FLAG_NO", "FLAG_YES", "Cached", "Flag", "Json", "Port", "Seconds", "Settings", "SettingsError", "cached",
           "flag", "reset", "settings_classes", "validate"]
