"""Exit codes and the errors the CLI turns into one line each.

Every expected failure is a `TcdoctorError` with a one-line message and an exit code; callers that
need to tell them apart catch the subclass (a report that cannot be loaded, a bad target, the
user's own code failing, a child process that failed), never parse messages.
"""

from __future__ import annotations

EXIT_OK = 0  # report written (for `check`: every check passed)
EXIT_CHECK_FAILED = 1  # `check`: at least one threshold failed
EXIT_USAGE = 2  # bad command line or bad target (missing file/function, wrong return type)
EXIT_USER_CODE = 3  # the user's code failed before anything could be measured
EXIT_INCOMPLETE = 4  # report written, but a phase failed (compile error, crash, timeout, OOM)
EXIT_INCONCLUSIVE = 5  # `check`: none failed, one inconclusive (its interval straddles the limit)
EXIT_INTERNAL = 70  # a bug in tcdoctor itself (one line; TCDOCTOR_DEBUG=1 shows the traceback)
EXIT_OUTPUT_CLOSED = 141  # stdout closed early (`| head`): the report files were written first

EXIT_CODES_HELP = (
    "Exit codes: 0 report written; 1 a `check` threshold failed; 2 usage or target error "
    "(missing file, syntax error, missing function, wrong return type); 3 the user's code "
    "failed before anything could be measured (build() or eager forward raised); "
    "4 report written but incomplete (compile error, crash, hang/timeout, OOM); "
    "5 a `check` was inconclusive (an interval straddles its threshold) and none failed; "
    "70 internal tcdoctor error (or a rank could not join the process group); 141 standard "
    "output closed early (e.g. `| head`), the report files having been written before anything "
    "was printed."
)

CHECK_EXIT_CODES_HELP = (
    "Exit codes: 0 every check passed (with --inconclusive pass, also when some were "
    "inconclusive); 1 a check failed (an incomplete analysis fails its "
    "'analysis complete' check: `check` never exits 4); 2 usage or target error, or a check that "
    "could not be judged (a missing file, a bad target, an analysis option a saved --report was "
    "not measured with, a --baseline of another target/backend/mode/device without "
    "--allow-mismatch, an incomplete baseline); 3 the user's code failed before anything could be "
    "measured; 5 none failed but one was inconclusive (its interval straddles the threshold, or a "
    "--require-verdict met a cant-tell verdict) with --inconclusive fail, the default; 70 internal "
    "tcdoctor error; 141 standard output closed early. Worst first: 2, then 1, then 5. --junit is "
    "written on exits 0 to 3 and 5 once the command line is parsed."
)


class TcdoctorError(Exception):
    """An expected failure with a one-line message and an exit code; never shown as a traceback."""

    exit_code_default = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.exit_code = self.exit_code_default if exit_code is None else exit_code


class UsageError(TcdoctorError):
    """A bad command line or option combination (exit 2)."""


class OptionError(UsageError, ValueError):
    """An analysis option outside what its declaration accepts (tcdoctor/options.py), from the
    command line or `tcdoctor.analyze(...)` (exit 2). A ValueError too, as Python callers expect."""


class TargetError(TcdoctorError):
    """`path.py:function` cannot be used: missing file or function, syntax error, wrong return (exit 2)."""


class UserCodeError(TcdoctorError):
    """The user's own code raised before anything could be measured: build(), the eager call (exit 3)."""

    exit_code_default = EXIT_USER_CODE


class ReportError(TcdoctorError, ValueError):
    """A saved report that cannot be read: not JSON, not a report, a newer schema (exit 2).
    A ValueError too, as `json` and `Report.from_dict` callers expect."""


class ChildFailed(TcdoctorError):
    """An analysis child process failed before any report could be written: it died while starting
    (exit 2), a rank could not join the process group (70: tcdoctor's setup or the environment,
    not the user's code). Always raised with its exit code."""
