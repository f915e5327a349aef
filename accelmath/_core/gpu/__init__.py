"""The GPU itself: its presence and library versions (``device``), streams, memory, the
per-thread library handles and per-stream workspaces (``resources``), compiled modules and
their launches, the core's own kernels, event-timed candidates, work beside a call's stream,
and the background warm-up of the libraries."""

__all__ = []
