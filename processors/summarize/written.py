"""The files the agent wrote, as it last wrote them: a write's text with its later edits.

An edit names the text it replaces (`old_str`, `old_string`), and an agent that wrote a
file itself quotes that text from its own earlier call. When a summary takes the call,
the text is gone from the request unless the brief carries it: the brief keeps each
file the agent wrote whole, with the edits it made since applied, as the file now reads.

A span is read into a `Writes`: the files it wrote (with its own later edits applied),
the edits it made to files it did not write (applied when it is merged into an older
brief that holds them), and the files it changed in ways not known (a shell redirect,
`sed -i`, a patch hunk that does not apply): those are dropped, as is any file whose
edit does not apply, since the brief must not show text the file no longer has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from processors.summarize.facts import ToolUse, arguments_of, command_of, files_of

__all__ = ["FileEdit", "Writes", "apply", "read_writes"]

#: Argument names of a whole file's text, in the tools that write one.
_TEXT_KEYS = ("file_text", "content", "contents")
_PATH_KEYS = ("path", "file_path", "filePath", "filepath", "absolute_path", "target_file")
#: The pairs of argument names an edit gives its replaced and new text in.
_EDIT_KEYS = (
    ("old_str", "new_str"),
    ("old_string", "new_string"),
    ("oldString", "newString"),
    ("old_text", "new_text"),
)
_EVERY_KEYS = ("replace_all", "replaceAll", "allow_multiple")
_WRITE_WORDS = ("write", "create")
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
_PATCH_MOVE = "*** Move to:"


@dataclass(frozen=True)
class FileEdit:
    """One replacement in a file: `old` becomes `new` (every occurrence with `every`)."""

    path: str
    old: str
    new: str
    every: bool = False
    after_line: int | None = None
    """An insertion after this line (1-based, 0 for the top) instead of a replacement."""


@dataclass
class Writes:
    """What one span did to the files the agent writes."""

    files: dict[str, str] = field(default_factory=dict)
    """Each file the span wrote, as it reads after the span's own later edits; in the
    order last written (a rewritten file moves to the end)."""
    edits: list[FileEdit] = field(default_factory=list)
    """Edits to files the span did not write, in order."""
    lost: set[str] = field(default_factory=set)
    """Files the span changed in ways not known: an older brief's text of them is stale."""

    def wrote(self, path: str, text: str) -> None:
        """The span wrote `path` whole: its text now, the newest of the span's files."""
        self.files.pop(path, None)
        self.files[path] = text
        self.lost.discard(path)

    def edited(self, edit: FileEdit) -> None:
        """The span made `edit`: applied to a file it wrote, or kept for an older brief's.

        A file the edit's text is not in is dropped: its text is no longer known.
        """
        if edit.path not in self.files:
            self.edits.append(edit)
            return
        _edit(self.files, edit)
        if edit.path not in self.files:
            self.lost.add(edit.path)


def apply(files: Mapping[str, str], writes: Writes) -> dict[str, str]:
    """`files` (an older brief's) updated by a newer span's `writes`."""
    out = dict(files)
    for edit in writes.edits:
        _edit(out, edit)
    for lost in writes.lost:
        for path in [p for p in out if _same_file(p, lost)]:
            del out[path]
    for path, text in writes.files.items():
        out.pop(path, None)
        out[path] = text
    return out


def read_writes(uses: Iterable[ToolUse]) -> Writes:
    """The files the calls of `uses` wrote and edited, in call order; failed calls skipped."""
    writes = Writes()
    for use in uses:
        call = use.call
        if call is None:
            continue
        if use.outcome.failed or use.answer.is_error:
            # A failed edit changed nothing; a failed shell command may have written
            # before it failed (`echo x > app.py && false`).
            if command_of(call) is not None:
                _lose(writes, files_of(call)[1])
            continue
        args = arguments_of(call)
        name = call.name.lower()
        if name == "apply_patch" or (name.endswith("patch") and _patch_text(call, args)):
            _read_patch(writes, _patch_text(call, args))
            continue
        path = _path(args)
        text = next((v for k in _TEXT_KEYS if isinstance(v := args.get(k), str)), None)
        command = args.get("command")
        if text is None and _creates(name, args):
            text = str(args["new_text"])
            command = "create"
        if path and command == "undo_edit":
            _lose(writes, [path])
            continue
        if path and text is not None and (command == "create" or _writes_whole(name, command)):
            writes.wrote(path, text)
            continue
        if path and (edits := _edits(path, args, command)) is not None:
            for edit in edits:
                writes.edited(edit)
            continue
        _lose(writes, files_of(call)[1])
    return writes


def _creates(name: str, args: Mapping[str, object]) -> bool:
    """Whether the call is Cline's `editor` given the new text alone, which creates a file.

    It fails, and reports so, when the file exists.
    """
    return (
        "editor" in name
        and "command" not in args
        and isinstance(args.get("new_text"), str)
        and args.get("old_text") is None
        and args.get("insert_line") is None
    )


def _writes_whole(name: str, command: object) -> bool:
    return command is None and any(word in name for word in _WRITE_WORDS) and "todo" not in name


def _path(args: Mapping[str, object]) -> str:
    return next((v for k in _PATH_KEYS if isinstance(v := args.get(k), str) and v.strip()), "")


def _edits(path: str, args: Mapping[str, object], command: object) -> list[FileEdit] | None:
    """The replacements a call makes in `path`; `None` when it is no edit."""
    every = any(args.get(k) is True for k in _EVERY_KEYS)
    expected = args.get("expected_replacements")
    if isinstance(expected, int) and not isinstance(expected, bool) and expected > 1:
        every = True
    line = args.get("insert_line")
    if command == "insert" or (command is None and line is not None):
        # The editor tool's `insert` puts its text after line `insert_line`; Cline's
        # editor, called with `insert_line` and no command, at it (before that line).
        new = args.get("new_str" if command == "insert" else "new_text")
        if isinstance(line, int) and not isinstance(line, bool) and isinstance(new, str):
            return [FileEdit(path, "", new, after_line=line if command == "insert" else line - 1)]
        return None
    listed = args.get("edits")
    pieces = listed if isinstance(listed, list) else [args]
    edits: list[FileEdit] = []
    for piece in pieces:
        if not isinstance(piece, dict):
            return None
        pair = next(
            (
                (o, n)
                for ok, nk in _EDIT_KEYS
                if isinstance(o := piece.get(ok), str) and isinstance(n := piece.get(nk), str)
            ),
            None,
        )
        if pair is None:
            return None
        piece_every = every or any(piece.get(k) is True for k in _EVERY_KEYS)
        edits.append(FileEdit(path, pair[0], pair[1], every=piece_every))
    return edits


def _edit(files: dict[str, str], edit: FileEdit) -> None:
    """Apply `edit` to the file it names, if `files` holds it; a file it misses is dropped."""
    text = files.get(edit.path)
    if text is None:
        return
    if edit.after_line is not None:
        lines = text.split("\n")
        if not 0 <= edit.after_line <= len(lines):
            del files[edit.path]
            return
        at = edit.after_line
        files[edit.path] = "\n".join([*lines[:at], edit.new, *lines[at:]])
        return
    if not edit.old or edit.old not in text:
        del files[edit.path]
        return
    files[edit.path] = text.replace(edit.old, edit.new, -1 if edit.every else 1)


def _lose(writes: Writes, paths: Iterable[str]) -> None:
    """Files a call changed in ways not known (a shell write): their text is dropped.

    A shell command names a file as the agent typed it (`sed -i s/a/b/ app.py`), a
    write tool by its full path: a path that ends with the typed one is that file. An
    older brief's files are matched the same way when the spans merge (`apply`).
    """
    for written in paths:
        bare = written.removeprefix("./")
        writes.lost.add(bare)
        for path in [*writes.files, *(e.path for e in writes.edits)]:
            if _same_file(path, bare):
                writes.files.pop(path, None)
                writes.lost.add(path)


def _same_file(path: str, typed: str) -> bool:
    return path == typed or path.endswith("/" + typed)


def _patch_text(call: object, args: Mapping[str, object]) -> str:
    value = args.get("input", args.get("patch"))
    if isinstance(value, str):
        return value
    raw = getattr(call, "parsed_arguments", None)
    return raw if isinstance(raw, str) and "*** Begin Patch" in raw else ""


def _read_patch(writes: Writes, patch: str) -> None:
    """A Codex `apply_patch`: added files written whole, updated ones edited hunk by hunk."""
    current: tuple[str, str] | None = None
    body: list[str] = []
    for line in [*patch.split("\n"), "*** End Patch"]:
        header = _PATCH_FILE.match(line)
        if header or line.startswith("*** End Patch"):
            if current is not None:
                _patch_file(writes, current[0], current[1], body)
            current = (header.group(1), header.group(2).strip()) if header else None
            body = []
        elif current is not None:
            body.append(line)


def _patch_file(writes: Writes, kind: str, path: str, body: list[str]) -> None:
    if kind == "Add":
        writes.wrote(path, "\n".join(line[1:] for line in body if line.startswith("+")))
        return
    if kind == "Delete":
        writes.files.pop(path, None)
        writes.lost.add(path)
        return
    if any(line.startswith(_PATCH_MOVE) for line in body):
        # A renamed file: what the brief knew of it under its old name is stale, and
        # the new name's text is not known whole.
        _lose(writes, [path])
        return
    for hunk in _hunks(body):
        old = "\n".join(line[1:] for line in hunk if line[:1] in (" ", "-"))
        new = "\n".join(line[1:] for line in hunk if line[:1] in (" ", "+"))
        writes.edited(FileEdit(path, old, new))


def _hunks(body: list[str]) -> list[list[str]]:
    hunks: list[list[str]] = [[]]
    for line in body:
        if line.startswith("@@"):
            hunks.append([])
        elif line[:1] in (" ", "-", "+"):
            hunks[-1].append(line)
    return [h for h in hunks if h]
