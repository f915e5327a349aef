"""accelmath.linalg (to come)."""

__all__ = []
