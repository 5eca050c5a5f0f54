"""A fake domain installed as a plug-in in tests (:mod:`tests.plugin.fakedomain`)."""
