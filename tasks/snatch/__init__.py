"""Snatch: a mutating admission webhook that prefers Kyma's worker pool for Pods in Kyma-managed namespaces."""
