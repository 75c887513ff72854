"""Exit codes and the one error type that the CLI turns into a one-line message."""

from __future__ import annotations

EXIT_OK = 0  # report written (for `check`: every check passed)
EXIT_CHECK_FAILED = 1  # `check`: at least one threshold failed
EXIT_USAGE = 2  # bad command line or bad target (missing file/function, wrong return type)
EXIT_USER_CODE = 3  # the user's code failed before anything could be measured
EXIT_INCOMPLETE = 4  # report written, but a phase failed (compile error, crash, timeout, OOM)
EXIT_INTERNAL = 70  # a bug in tcdoctor itself (one line; TCDOCTOR_DEBUG=1 shows the traceback)
EXIT_OUTPUT_CLOSED = 141  # stdout closed early (`| head`): the report files were written first

EXIT_CODES_HELP = (
    "Exit codes: 0 report written; 1 a `check` threshold failed; 2 usage or target error "
    "(missing file, syntax error, missing function, wrong return type); 3 the user's code "
    "failed before anything could be measured (build() or eager forward raised); "
    "4 report written but incomplete (compile error, crash, hang/timeout, OOM); "
    "70 internal tcdoctor error; 141 standard output closed early (e.g. `| head`), the report "
    "files having been written before anything was printed."
)


class TcdoctorError(Exception):
    """An expected failure with a one-line message and an exit code; never shown as a traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
