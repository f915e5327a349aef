"""A script that starts a local Dask cluster without an ``if __name__ == "__main__":`` guard.

Dask starts a local cluster's worker processes with multiprocessing's "spawn" method, which
runs the main script again in each new process before the worker's own code. A script that
calls :func:`~accelmath.subtraction.subtract_many` (without a client) or
:func:`~accelmath.subtraction.local_cluster` at its top level therefore calls it again in
every worker, which tries to start processes of its own while it is still importing the
script; multiprocessing refuses ("An attempt has been made to start a new process before the
current process has finished its bootstrapping phase"), the workers die, and Dask prints a
traceback per worker and per process. This module recognizes that case, on both sides, and
says it in one error with the two-line fix:

- in a worker still running the script (:func:`check_not_bootstrapping`): before Dask is
  asked for anything;
- in the script's own process (:func:`start_failure`): where the cluster failed to start and
  the call comes from the script's top-level code outside a guard
  (:func:`unguarded_main_script`), or the failure's chain holds multiprocessing's error.
"""

import ast
import multiprocessing
import sys

from accelmath.errors import StateError

__all__ = ["check_not_bootstrapping", "is_guarded", "start_failure", "unguarded_main_message",
           "unguarded_main_script"]

# The words of multiprocessing's own error, raised where a process is started while the main
# module is still being imported by a spawned process.
_BOOTSTRAPPING = "before the current process has finished its bootstrapping phase"


def unguarded_main_message(caller, script):
    """What to tell the user whose script starts a local cluster without a main guard.

    Parameters
    ----------
    caller : str
        The function called: ``"subtract_many"`` or ``"local_cluster"``.
    script : str or None
        The main script's path, where known.

    Returns
    -------
    str
        The explanation, ending with the two-line fix.

    Examples
    --------
    >>> from accelmath.subtraction._runs.main_guard import unguarded_main_message
    >>> print(unguarded_main_message("local_cluster", "run.py").splitlines()[-2])
        if __name__ == "__main__":
    """
    where = f"the script {script}" if script else "the main script"
    return (
        f"{caller} could not start its Dask worker processes: {where} calls {caller} without "
        "an `if __name__ == \"__main__\":` guard. Dask starts each worker with "
        "multiprocessing's \"spawn\" method, which runs the main script again in the new "
        f"process, so each worker ran {caller} too and tried to start a cluster of its own. "
        "Put the code that calls it under the guard, as in:\n\n"
        "    if __name__ == \"__main__\":\n"
        f"        {caller}(...)  # and the rest of the script's top-level work")


def check_not_bootstrapping(caller):
    """Raise the guard's :class:`StateError` in a process that is still running the main
    script as "spawn" started it: what would follow is Dask failing to start a worker of the
    worker, in many tracebacks.

    Raises
    ------
    StateError
        This process is a spawned process still importing the main script.
    """
    # (the flag multiprocessing itself reads to raise its bootstrapping error)
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # (the script runs as "__mp_main__" here; "__main__" is still spawn's own)
        script = getattr(sys.modules.get("__mp_main__"), "__file__", None)
        raise StateError(unguarded_main_message(caller, script or _main_script()))


def start_failure(exc, caller, script):
    """The :class:`StateError` to raise for ``exc``, Dask's failure to start a local cluster,
    where the cause is a main script without the guard; None for any other cause.

    Parameters
    ----------
    exc : BaseException
        What starting the cluster raised.
    caller : str
        The function called: ``"subtract_many"`` or ``"local_cluster"``.
    script : str or None
        The main script, where its top-level code calls ``caller`` outside a guard (what
        :func:`unguarded_main_script` returns).

    Returns
    -------
    StateError or None
        The error to raise instead of ``exc``, or None to let ``exc`` through.

    Notes
    -----
    The cause shows in ``exc`` itself in a process that a script started while it was being
    imported (multiprocessing's bootstrapping error, in the chain of Dask's errors); the
    script's own process sees only that its workers died, and ``script`` says why.

    Examples
    --------
    >>> from accelmath.subtraction._runs.main_guard import start_failure
    >>> start_failure(RuntimeError("Nanny failed to start."), "subtract_many", None) is None
    True
    >>> type(start_failure(RuntimeError("Nanny failed to start."), "subtract_many", "run.py"))
    <class 'accelmath.errors.StateError'>
    """
    seen = set()
    chained = exc
    while chained is not None and id(chained) not in seen:
        if _BOOTSTRAPPING in " ".join(str(chained).split()):  # (its lines break anywhere)
            return StateError(unguarded_main_message(caller, script or _main_script()))
        seen.add(id(chained))
        chained = chained.__cause__ or chained.__context__
    if script is not None:
        return StateError(unguarded_main_message(caller, script))
    return None


def _main_script():
    """The main module's file, where it has one (not at a prompt or in a notebook)."""
    return getattr(sys.modules.get("__main__"), "__file__", None)


def unguarded_main_script():
    """The main script's path where this call comes from its top-level code outside an
    ``if __name__ ...`` block (the code "spawn" runs again in every worker); else None.

    Returns
    -------
    str or None
        The script's path, or None: no main script (a prompt, a notebook), a call from
        elsewhere (a thread, a function called after the script's top-level code), a call
        under the guard, or a script that cannot be read.
    """
    main = sys.modules.get("__main__")
    script = _main_script()
    if main is None or script is None:
        return None
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main)
                                     and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return None
    try:
        with open(script, encoding="utf-8") as source:
            guarded = is_guarded(source.read(), frame.f_lineno)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    return None if guarded else script


def is_guarded(source, line):
    """Whether line ``line`` of a module's ``source`` lies in a top-level ``if`` block whose
    test reads ``__name__`` (the ``if __name__ == "__main__":`` guard, however spelled).

    Parameters
    ----------
    source : str
        The module's source.
    line : int
        A line number, from 1.

    Returns
    -------
    bool

    Examples
    --------
    >>> from accelmath.subtraction._runs.main_guard import is_guarded
    >>> script = 'import a\\nif __name__ == "__main__":\\n    a.run()\\na.run()\\n'
    >>> is_guarded(script, 3), is_guarded(script, 4)
    (True, False)
    """
    for statement in ast.parse(source).body:
        if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            return isinstance(statement, ast.If) and any(
                isinstance(node, ast.Name) and node.id == "__name__"
                for node in ast.walk(statement.test))
    return False
