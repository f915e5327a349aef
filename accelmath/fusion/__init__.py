"""accelmath.fusion (to come)."""

__all__ = []
