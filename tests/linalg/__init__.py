"""Tests of accelmath.linalg."""
