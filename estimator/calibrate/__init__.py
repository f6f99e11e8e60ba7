"""``sapp calibrate``: read measured logs (``logs``), fit the device-level terms and the matmul efficiency they
determine (``fit``), keep them as a calibration profile applied to later plans on the same device and framework
(``profile``)."""

from .fit import Calibration, StageFit, calibrate, save
from .logs import LogError, LogReading, looks_like_log, read_log, read_logs
from .profile import Profile, apply_profile, matching_profile, read_profile

__all__ = ["Calibration", "LogError", "LogReading", "Profile", "StageFit", "apply_profile", "calibrate",
           "looks_like_log", "matching_profile", "read_log", "read_logs", "read_profile", "save"]
