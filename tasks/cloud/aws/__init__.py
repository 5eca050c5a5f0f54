"""Cloud Resources on AWS: Scope building (:mod:`.scope`), the provider (:mod:`.provider`), each kind's
flow and plan, and the only layer that talks to AWS (:mod:`.client`)."""
