"""The cycle model: the device's control path at register level, no
arithmetic (docs/architecture.md section 11).

* :mod:`fsa.cycle.model` -- :func:`~fsa.cycle.model.simulate`: the queue,
  decoder, dispatch, semaphores and the matrix controller's issue rule from
  the plans, register for register (the ``exec`` counter and the others).
* :mod:`fsa.cycle.timing` -- the DMA timing (calibrated) and the host's
  pushes; :mod:`fsa.cycle.dma` -- the DMA engine; :mod:`fsa.cycle.fetch` --
  program fetch and where the harness places a program.
* :mod:`fsa.cycle.dispatch` -- the kernel language's deadlock and
  semaphore-race check (:func:`~fsa.cycle.dispatch.check_dispatch`).
* :mod:`fsa.cycle.predict` -- ``fsa predict``: the attention kernel's cycles
  for any length (steady state, extrapolation), the DMA demand.
* :mod:`fsa.cycle.calibrate` -- the DMA timing's calibration on the RTL.

The package imports none of them itself (the kernel language imports the
model and the dispatch check; the prediction imports the kernels).
"""
