"""Matrix products: the rules (pure), the epilogues, the cuBLASLt plan, the host product, the
planned :class:`~accelmath.linalg.Matmul` and the stateless :func:`~accelmath.linalg.matmul`.
Imports run down this list's reverse: ``stateless`` and ``plan`` on top, ``rules`` at the
bottom."""

__all__ = []
