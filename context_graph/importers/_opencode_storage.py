"""opencode's storage folder (`~/.local/share/opencode/storage`), read as exports.

Before its SQLite database (`_opencode_db`), opencode kept each session as JSON files,
one per record, and a folder of them is still what older versions leave on disk:

- `session/<project id>/<session id>.json`: the session's info (`id`, `directory`,
  `title`, `version`, `parentID` for a sub-agent's, `time.created`);
- `message/<session id>/<message id>.json`: a message's info (`role`, `time`, ...);
- `part/<message id>/<part id>.json`: a part, as in an export.

`read_storage` reads every session as the object `opencode export` writes for it,
`{info, messages: [{info, parts}]}`, oldest first, so the one importer
(`importers.opencode`) reads all three forms. Messages and parts are in the order of
their ids, which opencode makes ascending in time, as opencode lists them. Given the
folder (or the data folder holding it), every session is read; given one session's
file inside it, that session. Other folders of it (`project`, `session_diff`, `todo`,
`snapshot`) hold nothing the model was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from context_graph.errors import IngestError, SourceLocation

__all__ = ["read_storage", "storage_of"]


def _is_storage(folder: Path) -> bool:
    # `message/` is made with a session's first message; `project/` with opencode's start.
    return (folder / "session").is_dir() and (
        (folder / "message").is_dir() or (folder / "project").is_dir()
    )


def storage_of(path: Path) -> tuple[Path, Path | None] | None:
    """The storage folder `path` is, holds, or is a session file of, and that file.

    `None` when `path` is none of these (then it is read as a file).
    """
    if path.is_dir():
        for folder in (path, path / "storage"):
            if _is_storage(folder):
                return folder, None
        return None
    sessions = path.parent.parent
    if path.suffix == ".json" and sessions.name == "session":
        folder = sessions.parent
        if _is_storage(folder):
            return folder, path
    return None


def read_storage(folder: Path, session: Path | None = None) -> list[Any]:
    """Every session in the storage `folder` (or just `session`), as export objects.

    A record's folder is found by the name of the file opencode wrote it in (its id),
    never by a path a record holds.

    Raises:
        IngestError: a record file cannot be read, is not JSON, or is not an object
            (naming the file); a session file without a string `id`.
    """
    files = [session] if session is not None else sorted((folder / "session").glob("*/*.json"))
    found = []
    for file in files:
        info = _record(file)
        if not isinstance(info.get("id"), str) or not info["id"]:
            raise IngestError("an opencode session file must have a string `id`", _at(file, "id"))
        found.append((_created(info), file, info))
    found.sort(key=lambda entry: entry[0])
    return [_export(folder, file.stem, info) for _, file, info in found]


def _export(folder: Path, session_id: str, info: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for file in sorted((folder / "message" / session_id).glob("*.json")):
        parts = [_record(part) for part in sorted((folder / "part" / file.stem).glob("*.json"))]
        messages.append({"info": _record(file), "parts": parts})
    return {"info": info, "messages": messages}


def _created(info: dict[str, Any]) -> tuple[float, str]:
    time = info.get("time")
    created = time.get("created") if isinstance(time, dict) else None
    if isinstance(created, bool) or not isinstance(created, int | float):
        created = 0
    return (float(created), info["id"])


def _record(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"cannot read the record: {exc}", _at(file)) from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise IngestError("an opencode record must be JSON", _at(file)) from None
    if not isinstance(value, dict):
        msg = f"an opencode record must be a JSON object, got {type(value).__name__}"
        raise IngestError(msg, _at(file))
    return value


def _at(file: Path, path: str | None = None) -> SourceLocation:
    return SourceLocation(str(file), None, None, path)
