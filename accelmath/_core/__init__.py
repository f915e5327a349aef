"""Shared machinery for every domain module: operands, streams, memory, caches, devices."""
