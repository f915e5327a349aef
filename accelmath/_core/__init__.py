"""What every domain shares; it names no domain: the domains build on it.

- ``operand``: any array read as one record, one adapter per array package;
- ``gpu``: the GPU itself (presence and versions, streams, memory, library handles and
  workspaces, modules and launches, timing, the background warm-up);
- ``disk``: the on-disk store and the private file operations it trusts;
- here: the plan base and its lifetime (``plan``, ``lifetime``), one call's stream and
  context (``call``), the call memo and plan caches (``dispatch``, ``call_key``, ``cache``),
  the call shim (``hostcall``), layouts and argument checks (``layout``, ``arguments``),
  environment switches (``switches``).
"""

from accelmath._core.disk import library_paths

library_paths.install()

__all__ = []
