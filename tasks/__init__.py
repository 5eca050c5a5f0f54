"""Domains: one package per controller domain (pure logic modules + thin Celery tasks)."""
