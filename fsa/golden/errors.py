"""The golden model's exceptions: :class:`MachineError` (what the device
reports as an error, by its code of ``fsa/hw/errors.py``),
:class:`UnsupportedProgram` (a legal instruction whose effect the model does
not define) and :class:`Deadlock`.  :mod:`fsa.golden.machine` re-exports
them; the dataflows' executors (:mod:`fsa.golden.ud`) raise them too.
"""
from __future__ import annotations

__all__ = ["MachineError", "UnsupportedProgram", "Deadlock"]


class MachineError(RuntimeError):
    """The program did something the device reports as an error."""

    def __init__(self, code: str, message: str, index: int | None = None):
        super().__init__(f"{code}: {message}" + (f" (instruction {index})" if index is not None else ""))
        self.code, self.index = code, index


class UnsupportedProgram(ValueError):
    """A legal instruction whose effect the model does not define."""


class Deadlock(MachineError):
    """No engine can make progress: the oldest blocked pending instruction
    (`index`, "mx" or "dma" in `engine`) waits for semaphore `sem_id` to
    equal `want`; it holds `have`."""

    def __init__(self, engine: str, index: int, sem_id: int, want: int, have: int):
        super().__init__("DEADLOCK", f"{engine} instruction {index} waits for semaphore "
                         f"{sem_id} == {want} (it is {have})", index)
        self.engine, self.sem_id, self.want, self.have = engine, sem_id, want, have
