"""`premath witness-key`: the keys that tie instruction witnesses to the runs that wrote them
(premath/store/witness_mac.py, specs/mcp-http.md "Witness MAC keys", D22-3). Secrets are
never printed."""

from __future__ import annotations

import click

from premath.cli._options import json_option
from premath.cli._root import Reply, StrictGroup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KEY_FILE_HELP = "Key file (default: $PREMATH_WITNESS_KEY_FILE, else ~/.config/premath/witness.keys)"


@click.group("witness-key", cls=StrictGroup)
def witness_key() -> None:
    """Show, rotate and retire the witness MAC keys.

    Secrets are never printed.
    """


def _document(ring: Any, path: str) -> dict[str, Any]:
    if ring is None:
        return {"keyFile": path, "exists": False, "signingKeyId": None, "keyIds": []}
    return {
        "keyFile": ring.path,
        "exists": True,
        "signingKeyId": ring.signing.key_id,
        "keyIds": [key.key_id for key in ring.keys],
    }


def _text(document: dict[str, Any]) -> str:
    if not document["exists"]:
        return f"premath witness-key\n  Key file: {document['keyFile']} (not created yet)"
    lines = ["premath witness-key", f"  Key file: {document['keyFile']}"]
    for key_id in document["keyIds"]:
        role = "signs and verifies" if key_id == document["signingKeyId"] else "verifies"
        lines.append(f"  {key_id}: {role}")
    return "\n".join(lines)


@witness_key.command("list")
@click.option("--key-file", help=KEY_FILE_HELP)
@json_option
def witness_key_list(key_file: str | None) -> Reply:
    """Show the key file and its key ids.

    The last key signs; every key verifies.

    \b
    premath witness-key list --json
    """
    from premath.store.witness_mac import key_file_path, load_keyring

    path = key_file or key_file_path()
    return Reply(_document(load_keyring(path), path), text=_text)


@witness_key.command("rotate")
@click.option("--key-file", help=KEY_FILE_HELP)
@json_option
def witness_key_rotate(key_file: str | None) -> Reply:
    """Add a fresh signing key.

    Witnesses signed by older keys still verify until those are retired.

    \b
    premath witness-key rotate --json
    """
    from premath.store.witness_mac import key_file_path, rotate_key

    path = key_file or key_file_path()
    return Reply(_document(rotate_key(path), path), text=_text)


@witness_key.command("retire")
@click.argument("key_id")
@click.option("--key-file", help=KEY_FILE_HELP)
@json_option
def witness_key_retire(key_id: str, key_file: str | None) -> Reply:
    """Remove a key that no longer signs.

    The witnesses it signed stop authorising mutations.

    \b
    premath witness-key retire wk_1780000000_0a1b2c3d --json
    """
    from premath.store.witness_mac import key_file_path, retire_key

    path = key_file or key_file_path()
    return Reply(_document(retire_key(key_id, path), path), text=_text)
