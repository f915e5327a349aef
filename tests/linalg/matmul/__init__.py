"""The tests of accelmath.linalg's matrix products: matmul and Matmul, on the CPU and the GPU."""
