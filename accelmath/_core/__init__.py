"""What every domain shares: operands and their packages, streams, memory, per-thread
resources, candidate timing, the plan base, stateless dispatch and its caches, the on-disk
store, kernel modules, the call shim, argument checks and device queries. It names no
domain: the domains build on it."""

from accelmath._core import library_paths

library_paths.install()

__all__ = []
