"""Test helper: FFT plans made to choose the candidate of one engine."""


def prefer_engine(monkeypatch, engine):
    """Make the FFT executor choose a candidate with a step run by ``engine`` (``"columns"``,
    ``"mixed"``) whenever it has one, its candidates timed now rather than found in the store;
    returns the list that the steps of each candidate timed are appended to."""
    from accelmath.fft._cuda import CudaExecutor

    timed = []

    def fake_time(self, steps, *args):
        timed.append(steps)
        return 0.0 if any(step.engine == engine for step in steps) else 1.0

    monkeypatch.setenv("ACCELMATH_CACHE", "0")  # (timed now, not a stored choice)
    monkeypatch.setattr(CudaExecutor, "_time", fake_time)
    return timed
