"""Cloud Resources: the SKR loop (SKR objects -> KCP mirrors, across many SKRs as a Celery fan-out), the
KCP loop (KCP objects -> cloud resources), Scope and IpRange.

Pure modules: :mod:`~tasks.cloud.allocate`, :mod:`~tasks.cloud.split`, :mod:`~tasks.cloud.validate`,
:mod:`~tasks.cloud.state`, :mod:`~tasks.cloud.rotation`,
:mod:`~tasks.cloud.scope`. I/O: one provider layer per cloud (:mod:`~tasks.cloud.providers`,
:mod:`tasks.cloud.aws`), the KCP controllers (:mod:`tasks.cloud.kcp`), the SKR connect
(:mod:`tasks.cloud.skr`), the rotation in Redis (:mod:`~tasks.cloud.sweep`); the registrations are
in :mod:`~tasks.cloud.controller`. See docs/cloud.md.
"""
