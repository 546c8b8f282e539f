"""Per-endpoint request measurements, kept in memory for the planner's calibrated profile.

A store records each ranged read it makes (first byte, bytes, transfer time);
:meth:`Measurements.profile` turns the recent window into a profile with
:func:`planner.calibration.calibrated`, so the planner stays free of I/O.
"""

from __future__ import annotations

from collections import deque

from planner.calibration import Sample, calibrated
from planner.profiles import Profile


class Measurements:
    """The last ``window`` requests of one endpoint (one store instance / host)."""

    def __init__(self, window: int = 64) -> None:
        self.samples: deque[Sample] = deque(maxlen=window)

    def record(self, first_byte: float, nbytes: int, transfer: float) -> None:
        self.samples.append(Sample(first_byte, nbytes, transfer))

    def profile(self, static: Profile, *, calibrate: bool = True) -> Profile:
        """The profile a plan on this endpoint should assume; ``static`` when opted out."""
        if not calibrate:
            return static
        return calibrated(static, list(self.samples))
