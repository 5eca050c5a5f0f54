"""Informers: list + watch kept in memory, as client-go's reflector, store and shared informers.

- :mod:`informers.store`: the thread-safe store (label index, resourceVersion ordering, tombstones);
- :mod:`informers.reflector`: the list + watch loop (bookmarks, 410 relist, silence timeout) the
  watch engine (:mod:`watchers.engine`) and the workers' informers share;
- :mod:`informers.informer`: per-process informers for reconciles: started on first use, shared
  by every thread, kept current by the worker's own writes (write-through);
- :mod:`informers.reader`: the one reader of reconciles: each kind served from the informers or
  from the API server, as the domain's registration (:class:`informers.reader.Reads`) says.

Layering: imports ``fencing`` and ``kube`` only; ``watchers``, ``workers`` and ``tasks`` import it.
"""
