"""Logs capped on disk: the first HEAD_BYTES and the last TAIL_BYTES of a stream, a marker between.

A job's log (`jobs/<job>/log`, `senpai.fleet.supervise`) and each command's log (`train.log`, the
verifier's step logs: `senpai.job.measure.run_command`) are written through `CappedLog`, so a
command that prints gigabytes leaves a file of at most HEAD + 2 x TAIL bytes and one marker line
(plus, while it is written, one write: at most a 64 KiB chunk). The head holds how it started (the
config, the first error), the tail how it ended (the traceback); `senpai logs` and the failure
evidence read the tail, which is always the file's end.

How, and what a kill costs. The head is written straight. Past it, the writer appends until the
file holds 2 x TAIL bytes after the head; it then *compacts in place*: it writes the marker after
the head (`[senpai] N bytes of output cut here ...`, fixed width, so it is rewritten in place),
copies the last TAIL bytes down behind it, and truncates. The copy never overlaps its source, and
the file's end is the stream's end before and after the truncate, so a writer killed at any point
leaves a readable file of bounded size with the head, the marker and the last TAIL bytes it wrote
(every write is an unbuffered write(2): nothing written is held in the process). A kill in the
middle of a compaction leaves up to TAIL bytes twice after the marker, and the marker's count
then says more than was really cut. What the killed process had not yet written (the rest
of a pipe) is lost with it. Each write and compaction holds an flock on the file, which other
writers of the same file take too (`JobDir.log`'s `[senpai-fleet]` lines), so their lines are
neither overwritten nor cut by a compaction in flight.

`SENPAI_LOG_HEAD_BYTES` / `SENPAI_LOG_TAIL_BYTES` in the environment change the sizes (positive
integers; anything else is ignored), e.g. for a test, or a team that wants longer logs.
"""

import atexit
import fcntl
import os
import sys
import threading
from pathlib import Path

HEAD_BYTES = 8 * 1024**2
TAIL_BYTES = 8 * 1024**2
ENV_HEAD, ENV_TAIL = "SENPAI_LOG_HEAD_BYTES", "SENPAI_LOG_TAIL_BYTES"
CHUNK = 64 * 1024  # what the pump reads at a time; a compaction copies 1 MiB at a time
_COPY = 1024**2
_MAX_COUNT = 10**18  # the marker leaves room for this many digits of cut bytes
EXIT_WAIT_SECONDS = 3.0


def _size(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else default


class CappedLog:
    """A log file that keeps the first `head` and the last `tail` bytes written to it (module
    docstring). `fd` must be open for reading and writing; the log owns it and closes it in
    `close`. `head`/`tail` default to $SENPAI_LOG_HEAD_BYTES / $SENPAI_LOG_TAIL_BYTES, else
    HEAD_BYTES / TAIL_BYTES. Bytes that were in the file already count as the stream's first."""

    def __init__(self, fd: int, head: int | None = None, tail: int | None = None) -> None:
        self.fd = fd
        self.head = head if head is not None else _size(ENV_HEAD, HEAD_BYTES)
        self.tail = tail if tail is not None else _size(ENV_TAIL, TAIL_BYTES)
        self.cut = 0  # bytes of the stream no longer in the file
        self.marker_size = len(self._marker(_MAX_COUNT))

    @classmethod
    def create(cls, path: Path, head: int | None = None, tail: int | None = None) -> "CappedLog":
        """A new, empty log at `path`. Raises FileExistsError if something is there (`measure.clear`
        it first: a planted symlink or FIFO), OSError if it cannot be created."""
        return cls(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), head, tail)

    def __enter__(self) -> "CappedLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def write(self, data: bytes) -> int:
        """Append `data` (compacting if the tail is full); returns len(data). Raises OSError (a full disk)."""
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            end = os.lseek(self.fd, 0, os.SEEK_END)  # another writer may have appended a line
            view = memoryview(data)
            while view:
                written = os.pwrite(self.fd, view, end)
                end, view = end + written, view[written:]
            if end >= self.head + self.marker_size + 2 * self.tail:
                self._compact(end)
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        return len(data)

    def _marker(self, cut: int) -> bytes:
        text = f"\n[senpai] {cut} bytes of output cut here: this log keeps its first {self.head} and last {self.tail}+ bytes"
        return text.encode() + b" " * (len(str(_MAX_COUNT)) - len(str(cut))) + b"\n"

    def _compact(self, end: int) -> None:
        """Keep the head, the marker and the last `tail` bytes of the `end` bytes in the file."""
        start = self.head + (self.marker_size if self.cut else 0)  # where the kept stream resumes
        self.cut += end - self.tail - start
        dst = self.head + self.marker_size
        os.pwrite(self.fd, self._marker(min(self.cut, _MAX_COUNT - 1)), self.head)  # first: a cut file always says so
        for offset in range(0, self.tail, _COPY):
            size = min(_COPY, self.tail - offset)
            os.pwrite(self.fd, os.pread(self.fd, size, end - self.tail + offset), dst + offset)
        os.ftruncate(self.fd, dst + self.tail)


class Capture:
    """This process's fds 1 and 2, and so every child's, routed into a CappedLog by a thread that
    drains the pipe until every writer has closed it. Use `capture(fd)`. Closed at exit too (after
    an uncaught exception's traceback went through it). If this process is killed, the pipe has no
    reader: a child's next write fails (EPIPE); the local fleet reports such a job Lost and kills it."""

    def __init__(self, log: CappedLog) -> None:
        self.log = log
        read, write = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.saved = os.dup(1), os.dup(2)  # not inheritable: a child never holds the log's own fd
        os.dup2(write, 1)
        os.dup2(write, 2)
        os.close(write)
        self.thread = threading.Thread(target=self._pump, args=(read,), name="logcap", daemon=True)
        self.thread.start()
        self.closed = False
        atexit.register(self.close, EXIT_WAIT_SECONDS)

    def _pump(self, read: int) -> None:
        log: CappedLog | None = self.log
        try:
            while chunk := os.read(read, CHUNK):
                if log is None:
                    continue  # drain what is left: a writer blocked on a full pipe must not hang
                try:
                    log.write(chunk)
                except OSError:  # a full disk: the rest is dropped, the command runs on
                    log = None
        finally:
            os.close(read)

    def close(self, timeout: float) -> bool:
        """Restore fds 1 and 2 and wait up to `timeout` seconds for the pump to write what the
        pipe still holds (it ends once every child holding the pipe is gone). True if it ended;
        if not, the pump goes on in the background (the log file stays open). Idempotent."""
        if self.closed:
            return not self.thread.is_alive()
        self.closed = True
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        self.thread.join(timeout)
        if self.thread.is_alive():
            return False
        self.log.close()
        return True


def capture(fd: int, head: int | None = None, tail: int | None = None) -> Capture:
    """Route this process's fds 1 and 2 into the log file open (read-write) at `fd`, capped
    (`CappedLog`): what this process and every child it starts from now on print. Stop with
    `Capture.close`, which waits for the last bytes."""
    return Capture(CappedLog(fd, head, tail))
