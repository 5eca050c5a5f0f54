"""The Cloud kinds' declarations, one module per kind (:class:`tasks.cloud.registry.Kind`).

Every module of this package is imported once by :func:`tasks.cloud.registry.kinds` and registers its
kind; a new kind is one more module here, its plans and its provider calls (docs/cloud.md, "A new kind").
"""
