"""ExternalGateway (``gateway.kyma-project.io/v1alpha1``): an mTLS Istio Gateway for a customer's external
domain, with its Gardener DNSEntry and Certificate, the CA Secret and the two EnvoyFilters
(:mod:`.plan` is the pure core, :mod:`.controller` the ``externalgateway`` controller)."""
