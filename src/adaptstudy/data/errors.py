"""The data layer's errors: one clear message naming the file, line or folder at fault."""


class DataNotFoundError(FileNotFoundError):
    """A task's files are neither in the data directory nor reachable on the Hub."""


class MalformedDataError(ValueError):
    """A row that cannot be read as the task declares: names file and line."""
