"""The SKR loop: one connect to one SKR (:mod:`.connect`), the SKR reconcilers it runs
(:mod:`.cloudresources`, :mod:`.iprange`), the CRD installer (:mod:`.installer`) and SkrStatus
(:mod:`.skrstatus`). A connect is the ``cloud-skr-connect`` controller's reconcile; the rotation that
schedules connects is :mod:`tasks.cloud.sweep`.
"""
