"""The formats of more agents' own logs: Aider, Cline / Roo Code, OpenCode, OpenHands."""

from __future__ import annotations

from .aider import AiderFormat
from .cline import ClineFormat, ClineUiFormat
from .opencode import OpenCodeFormat
from .opencode_storage import OpenCodeDbFormat, OpenCodeStorageFormat
from .openhands import OpenHandsFormat

FORMATS = (AiderFormat(), ClineFormat(), ClineUiFormat(), OpenCodeFormat(),
           OpenCodeStorageFormat(), OpenCodeDbFormat(), OpenHandsFormat())
