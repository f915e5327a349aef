"""Tests marked ``gpu`` are skipped when no CUDA GPU is usable."""

import pytest


def pytest_collection_modifyitems(config, items):
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_tests:
        return
    from accelmath._core.device import gpu_available

    if not gpu_available():
        for item in gpu_tests:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
