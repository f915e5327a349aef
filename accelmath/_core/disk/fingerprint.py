"""What an autotune decision depends on besides the problem: the GPU, the driver and the
library versions, as one string that keys the decision in the on-disk store, so that a
decision made on another GPU or with other libraries is not taken for this one's."""

import importlib

__all__ = ["fingerprint"]

_fingerprints = {}    # (device_id, libraries) -> fingerprint, once per process


def fingerprint(device_id, libraries=()):
    """What an autotune decision depends on besides the problem: the GPU's name and compute
    capability, the driver, and the versions of ``libraries``, as one string to put in a key.

    Computed once per process and arguments; never raises (what cannot be read is written
    as ``none`` or ``unavailable``).

    Parameters
    ----------
    device_id : int
        The device ordinal.
    libraries : sequence of str
        Library names of :data:`accelmath.bindings.LIBRARIES`.

    Examples
    --------
    >>> from accelmath._core.disk.fingerprint import fingerprint
    >>> text = fingerprint(0, ("nvrtc",))
    >>> text.startswith("gpu=") and "; nvrtc=" in text
    True
    """
    key = (device_id, tuple(libraries))
    found = _fingerprints.get(key)
    if found is None:
        found = _fingerprints[key] = _make_fingerprint(device_id, key[1])
    return found


def _make_fingerprint(device_id, libraries):
    from accelmath._core.gpu import device

    gpu, capability = "none", "none"
    try:
        for found in device.devices():
            if found["index"] == device_id:
                gpu = found["name"]
                capability = "{}.{}".format(*found["compute_capability"])
    except Exception:  # a driver too broken to answer: the fingerprint must not raise
        pass
    driver = device.driver_version()
    parts = [f"gpu={gpu}", f"sm={capability}",
             "driver=" + ("none" if driver is None else "{}.{}".format(*driver))]
    for name in libraries:
        parts.append(f"{name}={_library_version(name)}")
    return "; ".join(parts)


def _library_version(name):
    from accelmath.bindings import LIBRARIES

    module_name = LIBRARIES.get(name)
    if module_name is None:
        return "unknown"
    try:
        version = importlib.import_module(f"accelmath.bindings.{module_name}").version()
    except Exception:  # not installed, or a failing query: the fingerprint must not raise
        return "unavailable"
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
