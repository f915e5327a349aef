"""Subtractions run beyond one array pair in memory: FITS files in and out (:mod:`.fits`), a
CSV manifest of file pairs run as a survey (:mod:`.manifest`), the ``accelmath subtract``
command (:mod:`.command`), and many pairs over a Dask cluster (:mod:`.cluster`, with
:mod:`.main_guard`'s check that a script that starts one guards its main block). Each is
imported when first used: ``astropy``, ``dask`` and ``distributed`` only then."""

__all__ = []
