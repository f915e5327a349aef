"""What accelmath keeps on disk, and how it trusts it: the store (compiled code, timing
choices, library paths, keyed by the machine's fingerprint), its entries' format, the private
file operations every read and write goes through, and where each CUDA library was found."""

__all__ = []
