"""ShellNode: one command execution, its status, exit and captured output.

The node holds what was asked (command, arguments, working directory, extra environment,
timeout, output cap) and what happened (status, exit code or signal, duration, capped
stdout/stderr). It never runs anything itself: ``Session.shell``
(:mod:`dagctx.session.jobs`) runs the command on the session's background loop through
:func:`dagctx.runtime.processes.run_command` and queues :meth:`ShellNode.apply_started`
and :meth:`ShellNode.apply_result`, which the next tick applies. Status goes pending →
running → completed / failed / timeout / cancelled; ``completed`` means exit code 0,
``failed`` a non-zero exit, a crash by signal, or a command that could not start
(``error`` says why).

Renders: COLLAPSED ``$ cmd args → status (exit 0, 0.2 s)``; SUMMARY adds the last output
lines; DETAILS the capped stdout and stderr; ALL adds cwd, environment and timing.

Secrets (``include_secrets=False``, the default; ``Session.shell`` passes the session's
setting): the captured output is redacted once, when the result is applied
(:func:`dagctx._secrets.redact`, unquoted ``KEY=value`` assignments included, which is
what ``cat .env`` or ``env`` prints), so the node holds, renders and saves only the redacted
text (the projection's budget counts that) and :meth:`ShellNode.safety_note` says what was
replaced (``output: 1 secret redacted (AWS Access Key)``, in ``Projection.notes`` and
``explain()``).
"""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from dagctx._lines import split_lines
from dagctx._quote import fence
from dagctx._secrets import describe, redact
from dagctx._validate import is_finite, is_int
from dagctx.errors import ShellError
from dagctx.nodes.base import Node, NodeState
from dagctx.runtime.processes import FINAL_STATUSES, CommandResult, CommandSpec, ShellStatus

DEFAULT_TIMEOUT = 30.0
DEFAULT_OUTPUT_CAP = 32 * 1024
SUMMARY_LINES = 5
_SHELL = "/bin/sh"


class ShellNode(Node):
    """One command execution (see the module docstring)."""

    type_name: ClassVar[str] = "shell"
    default_state: ClassVar[NodeState] = NodeState.DETAILS
    default_priority: ClassVar[int] = 55

    __slots__ = (
        "args",
        "cmd",
        "cwd",
        "duration",
        "env",
        "error",
        "exit_code",
        "include_secrets",
        "output_cap",
        "pid",
        "redacted",
        "shell",
        "signal",
        "started_at",
        "status",
        "stderr",
        "stderr_bytes",
        "stderr_cut",
        "stdout",
        "stdout_bytes",
        "stdout_cut",
        "timeout",
    )

    def __init__(
        self,
        cmd: str,
        args: Iterable[str] = (),
        *,
        cwd: str | os.PathLike[str] = ".",
        env: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        shell: bool = False,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        include_secrets: bool = False,
        **node_fields: Any,
    ) -> None:
        """Describe a command; nothing runs until ``Session.shell`` submits it.
        ``include_secrets`` keeps secrets in the output unredacted.

        Raises:
            ShellError: ``cmd``, ``args``, ``env``, ``timeout``, ``shell`` or ``output_cap``
                is malformed (the message names the value).
        """
        super().__init__(**node_fields)
        self.cmd = _check_cmd(cmd)
        self.args = _check_args(args)
        self.cwd = os.fspath(cwd)
        self.env = _check_env(env)
        self.timeout = _check_timeout(timeout)
        if not isinstance(shell, bool):
            raise ShellError(f"shell must be True or False, got {shell!r}", value=shell)
        self.shell = shell
        self.output_cap = _check_cap(output_cap)
        self.include_secrets = bool(include_secrets)
        self.redacted: str | None = None  # what redaction replaced in the output
        self.status: ShellStatus = "pending"
        self.pid: int | None = None
        self.started_at: float | None = None
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.duration: float | None = None
        self.error: str | None = None
        self.stdout = self.stderr = ""
        self.stdout_bytes = self.stderr_bytes = self.stdout_cut = self.stderr_cut = 0

    # -- the command ------------------------------------------------------------------

    @property
    def command_line(self) -> str:
        """The command as a shell would read it (arguments quoted)."""
        if self.shell:
            return " ".join([self.cmd, shlex.join(self.args)]) if self.args else self.cmd
        return shlex.join([self.cmd, *self.args])

    @property
    def argv(self) -> tuple[str, ...]:
        """What is executed: the command and its arguments, or ``/bin/sh -c line``."""
        if self.shell:
            return (_SHELL, "-c", self.command_line)
        return (self.cmd, *self.args)

    @property
    def finished(self) -> bool:
        """Whether the node shows a final status."""
        return self.status in FINAL_STATUSES

    def spec(self) -> CommandSpec:
        """The :class:`CommandSpec` that runs this command."""
        return CommandSpec(self.argv, self.cwd, self.env, self.timeout, self.output_cap)

    # -- results (applied at tick) ----------------------------------------------------

    def apply_started(self, pid: int, started_at: float) -> None:
        """The process exists: pending → running. Ignored once the node left pending."""
        if self.status != "pending":
            return
        self.status, self.pid, self.started_at = "running", pid, started_at
        self.mark_changed(f"running (pid {pid})")

    def apply_result(self, result: CommandResult) -> None:
        """Adopt how the command ended, its output redacted unless ``include_secrets``.
        Ignored if the node already shows a final status."""
        if self.finished:
            return
        self.status = result.status
        self.exit_code, self.signal, self.duration = (
            result.exit_code,
            result.signal,
            result.duration,
        )
        self.started_at = result.started_at if result.started_at is not None else self.started_at
        self.stdout, self.stderr = result.stdout, result.stderr
        if not self.include_secrets:
            self.stdout, found = redact(self.stdout, unquoted=True)
            self.stderr, in_stderr = redact(self.stderr, unquoted=True)
            found.update(in_stderr)
            self.redacted = f"output: {describe(found)}" if found else None
        self.stdout_bytes, self.stderr_bytes = result.stdout_bytes, result.stderr_bytes
        self.stdout_cut, self.stderr_cut = result.stdout_cut, result.stderr_cut
        self.error = result.error
        self.mark_changed(self._outcome())

    # -- rendering --------------------------------------------------------------------

    def label(self) -> str:
        return f"$ {self.command_line}"

    def safety_note(self) -> str | None:
        """What redaction replaced in the output, or None."""
        return self.redacted

    def _outcome(self) -> str:
        """``completed (exit 0, 0.2 s)``, ``timeout (signal SIGTERM, 30.1 s)``, ..."""
        facts = []
        if self.status == "running" and self.pid is not None:
            facts.append(f"pid {self.pid}")
        if self.exit_code is not None:
            facts.append(f"exit {self.exit_code}")
        if self.signal is not None:
            facts.append(f"signal {_signal_name(self.signal)}")
        if self.error and self.exit_code is None and self.signal is None:
            facts.append(self.error)
        if self.duration is not None:
            facts.append(_seconds(self.duration))
        return f"{self.status} ({', '.join(facts)})" if facts else self.status

    def _collapsed(self) -> str:
        return f"{self.label()} → {self._outcome()}"

    def render_state(self, state: NodeState) -> str:
        if state == NodeState.COLLAPSED:
            return self._collapsed()
        header = f"### {self._collapsed()} (#{self.id})"
        if state == NodeState.SUMMARY:
            return "\n".join([header, *self._last_lines()])
        parts = [header, *self._output_blocks()]
        if state == NodeState.ALL:
            parts.extend(self._particulars())
        return "\n".join(parts)

    def _last_lines(self) -> list[str]:
        if not self.finished:
            return [f"({self.status}; output appears when it ends)"]
        lines = []
        for name, text, keep in (
            ("stdout", self.stdout, SUMMARY_LINES),
            ("stderr", self.stderr, 3),
        ):
            tail = split_lines(text)[-keep:]
            if tail:
                last = "last line" if len(tail) == 1 else f"last {len(tail)} lines"
                lines.append(f"{name} ({last}):")
                lines.extend(f"  {line}" for line in tail)
        return lines or ["(no output)"]

    def _output_blocks(self) -> list[str]:
        if not self.finished:
            return [f"({self.status}; output appears when it ends)"]
        blocks = []
        for name, text, total in (
            ("stdout", self.stdout, self.stdout_bytes),
            ("stderr", self.stderr, self.stderr_bytes),
        ):
            if text:
                blocks.append(f"{name} ({total:,} bytes):\n{fence(text.rstrip(chr(10)))}")
        return blocks or ["(no output)"]

    def _particulars(self) -> list[str]:
        env = ", ".join(f"{k}={v}" for k, v in sorted(self.env.items())) if self.env else None
        limit = "none" if self.timeout is None else _seconds(self.timeout)
        lines = [
            f"cwd: {self.cwd}",
            f"env: {env} (over the inherited environment)" if env else "env: inherited",
            f"argv: {list(self.argv)!r}",
            f"timeout: {limit}; output cap: {self.output_cap:,} bytes per stream",
        ]
        if self.pid is not None:
            lines.append(f"pid: {self.pid} (own process group)")
        if self.started_at is not None:
            lines.append(f"started: {_timestamp(self.started_at)}")
        if self.duration is not None:
            lines.append(f"duration: {self.duration:.3f} s")
        if self.finished:
            lines.append(
                f"captured: stdout {self.stdout_bytes:,} bytes ({self.stdout_cut:,} cut),"
                f" stderr {self.stderr_bytes:,} bytes ({self.stderr_cut:,} cut)"
            )
        if self.error:
            lines.append(f"error: {self.error}")
        return lines

    # -- serialization ----------------------------------------------------------------

    def data_dict(self) -> dict[str, Any]:
        return {
            "cmd": self.cmd,
            "args": list(self.args),
            "cwd": self.cwd,
            "env": dict(self.env) if self.env is not None else None,
            "timeout": self.timeout,
            "shell": self.shell,
            "output_cap": self.output_cap,
            "include_secrets": self.include_secrets,
            "redacted": self.redacted,
            "status": self.status,
            "pid": self.pid,
            "started_at": self.started_at,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "duration": self.duration,
            "error": self.error,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "stdout_bytes": self.stdout_bytes,
            "stderr_bytes": self.stderr_bytes,
            "stdout_cut": self.stdout_cut,
            "stderr_cut": self.stderr_cut,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ShellNode:
        """Rebuild a node; a restored pending or running node is not re-attached to any
        process (only the session that started a command gets its result)."""
        node = cls(
            data["cmd"],
            data.get("args", ()),
            cwd=data.get("cwd", "."),
            env=data.get("env"),
            timeout=data.get("timeout", DEFAULT_TIMEOUT),
            shell=data.get("shell", False),
            output_cap=data.get("output_cap", DEFAULT_OUTPUT_CAP),
            include_secrets=data.get("include_secrets") is True,
        )
        redacted = data.get("redacted")
        node.redacted = redacted if isinstance(redacted, str) else None
        status = data.get("status", "pending")
        if status not in FINAL_STATUSES | {"pending", "running"}:
            raise ShellError(f"unknown shell status {status!r}", value=status)
        node.status = status
        for name in ("pid", "started_at", "exit_code", "signal", "duration", "error"):
            setattr(node, name, data.get(name))
        for name in ("stdout", "stderr"):
            setattr(node, name, str(data.get(name, "")))
        for name in ("stdout_bytes", "stderr_bytes", "stdout_cut", "stderr_cut"):
            setattr(node, name, int(data.get(name, 0)))
        return node


# -- validation -------------------------------------------------------------------------


def _check_cmd(cmd: object) -> str:
    if not isinstance(cmd, str) or not cmd.strip() or "\x00" in cmd:
        raise ShellError(
            f"cmd must be a non-empty string without NUL bytes, got {cmd!r}", value=cmd
        )
    return cmd


def _check_args(args: object) -> list[str]:
    if isinstance(args, str | bytes) or not isinstance(args, Iterable):
        raise ShellError(f"args must be a list of strings, got {args!r}", value=args)
    items = list(args)
    for item in items:
        if not isinstance(item, str) or "\x00" in item:
            raise ShellError(
                f"every argument must be a string without NUL bytes, got {item!r}", value=item
            )
    return items


def _check_env(env: object) -> dict[str, str] | None:
    if env is None:
        return None
    if not isinstance(env, Mapping):
        raise ShellError(f"env must be a mapping of strings to strings, got {env!r}", value=env)
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\x00" in key:
            raise ShellError(f"invalid environment variable name {key!r}", value=key)
        if not isinstance(value, str) or "\x00" in value:
            raise ShellError(
                f"environment variable {key!r} must be a string, got {value!r}", value=value
            )
    return dict(env)


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if not is_finite(timeout) or timeout <= 0:
        raise ShellError(
            f"timeout must be a positive number of seconds or None, got {timeout!r}", value=timeout
        )
    return float(timeout)


def _check_cap(cap: object) -> int:
    if not is_int(cap) or cap < 2:
        raise ShellError(f"output_cap must be an int of at least 2 bytes, got {cap!r}", value=cap)
    return cap


# -- formatting -------------------------------------------------------------------------


def _seconds(value: float) -> str:
    if value < 0.1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _timestamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
