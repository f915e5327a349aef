"""A script that starts a local Dask cluster without an ``if __name__ == "__main__":`` guard
gets one clear error that shows the fix, not Dask's tracebacks: the mapping of Dask's failure
to that error, the reading of a script's guard, and a real unguarded script end to end."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from accelmath.errors import AccelmathError, StateError
from accelmath.subtraction._runs import main_guard as _main_guard
from accelmath.subtraction._runs.main_guard import is_guarded, start_failure, unguarded_main_message

REPO = Path(__file__).resolve().parents[2]

# multiprocessing's error, word for word (Python 3.10 to 3.13), as a process that is still
# importing the main script meets it on starting a process of its own
_BOOTSTRAPPING = RuntimeError('''
        An attempt has been made to start a new process before the
        current process has finished its bootstrapping phase.

        This probably means that you are not using fork to start your
        child processes and you have forgotten to use the proper idiom
        in the main module:

            if __name__ == '__main__':
                freeze_support()
                ...

        The "freeze_support()" line can be omitted if the program
        is not going to be frozen to produce an executable.''')


def _dask_failure(cause=None):
    """What ``distributed.SpecCluster`` raises when its Nanny cannot start a worker: a
    ``RuntimeError('Nanny failed to start.')`` raised from the Nanny's own error, raised
    while handling ``cause`` (the bootstrapping error, in a worker that runs the script)."""
    try:
        try:
            if cause is not None:
                raise cause
            raise RuntimeError("Nanny failed to start worker process")
        except RuntimeError as inner:
            raise RuntimeError("Nanny failed to start worker process") from (
                inner if cause is not None else None)
    except RuntimeError as nanny:
        try:
            raise RuntimeError("Nanny failed to start.") from nanny
        except RuntimeError as outer:
            return outer


def _assert_explains_the_guard(message, caller, script=None):
    assert message.startswith(f"{caller} could not start its Dask worker processes: ")
    assert "without an `if __name__ == \"__main__\":` guard" in message
    assert "\"spawn\"" in message and "runs the main script again" in message
    assert message.endswith("\n\n    if __name__ == \"__main__\":\n"
                            f"        {caller}(...)  # and the rest of the script's top-level work")
    if script is not None:
        assert f"the script {script} calls {caller}" in message


@pytest.mark.parametrize("caller", ["subtract_many", "local_cluster"])
def test_the_bootstrapping_error_in_dasks_chain_becomes_the_guards(caller):
    error = start_failure(_dask_failure(_BOOTSTRAPPING), caller, None)
    assert isinstance(error, StateError) and isinstance(error, AccelmathError)
    assert isinstance(error, RuntimeError)  # (as what it replaces: callers catching it still do)
    _assert_explains_the_guard(str(error), caller)


def test_a_worker_that_died_from_an_unguarded_script_becomes_the_guards_error():
    # the script's own process: the workers died, the reason is in their output only
    error = start_failure(_dask_failure(), "subtract_many", "/home/me/run.py")
    _assert_explains_the_guard(str(error), "subtract_many", "/home/me/run.py")


def test_other_failures_pass_through():
    assert start_failure(_dask_failure(), "subtract_many", None) is None
    assert start_failure(OSError("address already in use"), "local_cluster", None) is None


def test_a_cyclic_chain_ends():
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert start_failure(first, "subtract_many", None) is None


def test_a_process_still_importing_the_script_raises_at_once(monkeypatch):
    import multiprocessing

    process = multiprocessing.current_process()
    monkeypatch.setattr(process, "_inheriting", True, raising=False)
    with pytest.raises(StateError) as info:
        _main_guard.check_not_bootstrapping("local_cluster")
    _assert_explains_the_guard(str(info.value), "local_cluster")
    monkeypatch.setattr(process, "_inheriting", False)
    _main_guard.check_not_bootstrapping("local_cluster")  # no error


_SCRIPT = textwrap.dedent('''\
    import sys

    def run():
        return sys.argv

    if __name__ == "__main__":
        run()
    if "__main__" == __name__:
        run()
    run()
    if sys.argv:
        run()
    ''')


@pytest.mark.parametrize("line,guarded", [
    (1, False), (4, False),  # an import; the body of a function (its call decides)
    (7, True), (9, True),  # under the guard, however it is spelled
    (10, False), (12, False),  # at the top level; under an if of something else
])
def test_is_guarded(line, guarded):
    assert is_guarded(_SCRIPT, line) is guarded


def test_the_message_names_the_script():
    message = unguarded_main_message("subtract_many", "pipeline.py")
    _assert_explains_the_guard(message, "subtract_many", "pipeline.py")
    assert "the main script calls" in unguarded_main_message("subtract_many", None)


_UNGUARDED = textwrap.dedent('''\
    from accelmath.subtraction import subtract_many, synthetic_pair

    pairs = [synthetic_pair(64, seed=seed, stars=40, kernel_half_width=3) for seed in (1, 2)]
    print(subtract_many([(p.reference, p.science) for p in pairs], gpus=0, workers=1,
                        half_width=3, reduce=lambda result: result.ratio))
    ''')


def _run_script(tmp_path, source):
    script = tmp_path / "pipeline.py"
    script.write_text(source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=240)
    return script, result


def test_an_unguarded_script_gets_the_guards_error(tmp_path):
    pytest.importorskip("distributed")
    script, result = _run_script(tmp_path, _UNGUARDED)
    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stderr.rstrip().split("\nTraceback (most recent call last):\n")[-1]
    message = last[last.index("accelmath.errors.StateError: "):]
    _assert_explains_the_guard(message.removeprefix("accelmath.errors.StateError: "),
                               "subtract_many", str(script))
    # none of Dask's tracebacks, nor multiprocessing's message
    assert "Nanny failed to start" not in result.stderr
    assert "bootstrapping phase" not in result.stderr


def test_the_same_script_guarded_runs(tmp_path):
    pytest.importorskip("distributed")
    body = textwrap.indent(_UNGUARDED.split("\n", 2)[2], "    ")
    guarded = _UNGUARDED.split("\n", 2)[0] + "\n\nif __name__ == \"__main__\":\n" + body
    _, result = _run_script(tmp_path, guarded)
    assert result.returncode == 0, result.stderr
    assert [round(float(v), 1) for v in result.stdout.strip("[]\n").split(",")] == [1.3, 1.3]
