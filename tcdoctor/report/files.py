"""The one function that writes a file: `write_atomic`. Every report, overview, JUnit, diff and
sweep record tcdoctor writes goes through it (render/write.py renders the formats and calls it;
`Report.save` and `Sweep.save` call it), and so does every file a parent hands a child.

Method. The text goes to a temporary file in the destination's own folder (so the rename never
crosses a file system), is flushed and fsynced, then `os.replace`d over the destination: a reader,
a crash or a `kill -9` sees the old file or the new one, never half of one. A failure at any step
removes the temporary file and leaves the old file as it was.

Pitfalls. Whatever renders the text must finish before this is called (render/write.py renders
every format first): a renderer that raises must not cost the previous file. Appending (GitHub's
step summary, which other steps also write to) is not replacing, and does not come here.
"""

from __future__ import annotations

import contextlib
import os
import secrets


def write_atomic(path: str, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file beside it and a rename; OSError as
    the system gives it, with no temporary file left behind. A symlink is followed (its target is
    replaced, the link kept); a path that is not a regular file (`/dev/stdout`, a named pipe) is
    written to directly: there is nothing to rename over."""
    real = os.path.realpath(path)
    if os.path.exists(real) and not os.path.isfile(real):
        with open(real, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    folder, name = os.path.split(real)
    fd, tmp = _create_beside(folder, name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _create_beside(folder: str, name: str) -> tuple[int, str]:
    """A new, uniquely named temporary file in `folder`, open for writing, and its path. Created
    with mode 0o666 as a plain open() creates a file: the system takes the process umask off
    itself, so the umask is never read or changed here (os.umask would set it process-wide for a
    moment, under every other thread: a notebook's). Not tempfile.mkstemp: its 0600 is not what
    the user's own files get."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {os.path.join(folder, name)}")
