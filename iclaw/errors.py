"""One exception type for "the user gave us something bad": the CLI prints it as one line, no traceback."""


class IclawError(Exception):
    """An error caused by input (a file, a flag, a name) that the user can fix. Message names the culprit."""
