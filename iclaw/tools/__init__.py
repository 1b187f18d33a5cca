"""Tools the agent can call (bash, python), run in a sandbox. See sandbox.py for the isolation levels."""

from iclaw.tools.sandbox import TOOLS, Limits, Sandbox, ToolResult, detect_level, require_safe

__all__ = ["TOOLS", "Limits", "Sandbox", "ToolResult", "detect_level", "require_safe"]
