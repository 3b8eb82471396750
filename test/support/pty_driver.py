#!/usr/bin/env python3
"""Runs one command on a pseudo-terminal and plays a script against it.

Usage: pty_driver.py < spec.json

spec = {
  "argv": ["node", "bin/chatctl.js", ...],   # argv[0] is looked up as given (use an absolute path)
  "env": {...},                              # the whole environment of the child
  "cwd": "/some/dir",
  "timeoutMs": 8000,                         # hard limit for the whole session
  "stepTimeoutMs": 4000,                     # limit for each "expect"
  "cols": 120, "rows": 40,
  "stdoutFile": null,                        # if set, the child's stdout goes to this file (not the pty)
  "steps": [
    {"expect": "Endpoint name"},             # wait for text (ANSI sequences ignored) after the last match
    {"send": "billing\\r"},                  # write to the terminal
    {"sleepMs": 50}
  ]
}

Prints one JSON line on stdout:
  {"exitCode": int|null, "signal": int|null, "output": str (raw bytes as latin-1-safe utf-8),
   "timedOut": bool, "failedStep": int|null, "error": str|null}
The child is always killed (SIGKILL) if it is still running at the deadline.
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def main() -> None:
    spec = json.load(sys.stdin)
    argv = spec["argv"]
    env = {str(k): str(v) for k, v in spec.get("env", {}).items()}
    cwd = spec.get("cwd") or os.getcwd()
    deadline = time.monotonic() + spec.get("timeoutMs", 8000) / 1000
    step_timeout = spec.get("stepTimeoutMs", 4000) / 1000
    stdout_file = spec.get("stdoutFile")

    pid, fd = pty.fork()
    if pid == 0:  # child: the pty is stdin, stdout and stderr, and the controlling terminal
        try:
            os.chdir(cwd)
            if stdout_file:
                out = os.open(stdout_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(out, 1)
                os.close(out)
            os.execve(argv[0], argv, env)
        except BaseException as e:  # noqa: BLE001
            os.write(2, f"pty_driver: exec failed: {e}\n".encode())
        finally:
            os._exit(127)

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", spec.get("rows", 40), spec.get("cols", 120), 0, 0))

    buf = bytearray()
    closed = False
    status = None
    result = {"exitCode": None, "signal": None, "timedOut": False, "failedStep": None, "error": None}

    def pump(limit: float) -> None:
        """Reads what the child wrote, for at most `limit` seconds (returns early on data)."""
        nonlocal closed
        if closed:
            time.sleep(min(limit, 0.01))
            return
        r, _, _ = select.select([fd], [], [], max(0.0, limit))
        if not r:
            return
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: every slave end is closed
            data = b""
        if data:
            buf.extend(data)
        else:
            closed = True

    def reap(block: bool):
        nonlocal status
        if status is None:
            p, st = os.waitpid(pid, 0 if block else os.WNOHANG)
            if p == pid:
                status = st
        return status

    searched = 0  # offset in the ANSI-stripped text after the last match
    try:
        for i, step in enumerate(spec.get("steps", [])):
            if "expect" in step:
                want = step["expect"]
                until = min(deadline, time.monotonic() + step.get("timeoutMs", step_timeout * 1000) / 1000)
                while True:
                    text = ANSI.sub(b"", bytes(buf)).decode("utf-8", "replace")
                    at = text.find(want, searched)
                    if at >= 0:
                        searched = at + len(want)
                        break
                    now = time.monotonic()
                    if now >= until or (closed and reap(False) is not None):
                        result["failedStep"] = i
                        result["timedOut"] = now >= deadline
                        result["error"] = f"step {i}: did not see {want!r}" + (" (the program ended)" if closed else "")
                        raise StopIteration
                    pump(min(0.05, until - now))
            elif "send" in step:
                # Let the program read what came before, then type.
                pump(0.0)
                try:
                    os.write(fd, step["send"].encode("utf-8"))
                except OSError as e:
                    result["failedStep"] = i
                    result["error"] = f"step {i}: cannot write: {e}"
                    raise StopIteration
                time.sleep(step.get("delayMs", 40) / 1000)
            elif "sleepMs" in step:
                end = min(deadline, time.monotonic() + step["sleepMs"] / 1000)
                while time.monotonic() < end:
                    pump(end - time.monotonic())
        # Wait for the program to end, reading until the terminal closes.
        while reap(False) is None or not closed:
            now = time.monotonic()
            if now >= deadline:
                result["timedOut"] = True
                result["error"] = result["error"] or "the program did not end before the deadline"
                break
            pump(min(0.05, deadline - now))
    except StopIteration:
        pass
    finally:
        if reap(False) is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            reap(True)
        # Whatever is left in the terminal buffer.
        while not closed:
            pump(0.05)
            if not closed and not select.select([fd], [], [], 0)[0]:
                break
        os.close(fd)

    if os.WIFEXITED(status):
        result["exitCode"] = os.WEXITSTATUS(status)
    elif os.WIFSIGNALED(status):
        result["signal"] = os.WTERMSIG(status)
    result["output"] = bytes(buf).decode("utf-8", "replace")
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
