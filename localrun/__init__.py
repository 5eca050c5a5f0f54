"""The local harness of ``reconcilery up``: each domain's part of a run on one machine.

One module per domain, each a :class:`workers.domains.Local` that its domain's registration names
(``Domain.local``, e.g. ``"localrun.cloud:CloudResourcesLocal"``): CRDs on the dev API server, the
stand-ins its examples talk to, seeded clusters, in-process webhooks and the summary rows. It ships in
the embedded distribution (``reconcilery[embedded]``) beside :mod:`kubedev` and :mod:`standins`, never
in the runtime image.

A harness never changes ``os.environ``: what the processes ``up`` starts must see goes into
:attr:`workers.domains.LocalRun.env` (their spawn environment); what runs in ``up``'s own process gets
explicit arguments. Layer: above the domains (``tasks``), beside ``reconcilery``; the modules are
independent of each other (contracts in ``pyproject.toml``).
"""
