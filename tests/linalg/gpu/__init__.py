"""The GPU tests of accelmath.linalg's solvers and decompositions, by routine."""
