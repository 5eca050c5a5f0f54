"""The KCP loop: controllers over ``cloud-control.kyma-project.io`` (and the Kyma CR) on queue ``cloud-kcp``.

One module per controller (:mod:`.kyma`, :mod:`.scope`, :mod:`.network`, :mod:`.iprange`, :mod:`.nuke`);
each ``reconcile(key)`` reads through ``kube``, decides with the pure modules and the provider layer,
and writes status only when it changes.
"""
