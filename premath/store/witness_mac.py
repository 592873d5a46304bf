"""Instruction witnesses tied to the runs that wrote them (divergence D22-3).

The pipeline writes a witness's exact bytes, then `<witness>.mac` beside it: an HMAC-SHA256 over
those bytes, the run id and the key id, with a key kept outside the repository. The witness bytes
stay the reference's; the sidecar's name does not end in `.json`, so readers of
`artifacts/ciwitness/*.json` never take it for a witness. The mutation gate honours a witness
only when its sidecar verifies (`verify`), so a hand-written, edited or copied witness authorises
nothing.

Keys live in one key file (`key_file_path`: `PREMATH_WITNESS_KEY_FILE`, else
`$XDG_CONFIG_HOME/premath/witness.keys`, else `~/.config/premath/witness.keys`), created with mode
0600 on first signing. One key a line, `<key id> <64 hex digits>`, `#` comments: the last line
signs, every line verifies, so rotation appends a key and retiring one removes its line (the
witnesses it signed stop verifying). A key file that others may read or write is refused.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from premath.clock import epoch_ns
from premath.errors import InvalidUsage, IoFailure, RuleRefused
from premath.store.atomic import fsync_directory, stage_file
from premath.store.files import open_regular, read_capped
from premath.store.locks import DEFAULT_LOCK_TIMEOUT_S, artifact_lock
from premath.store.user_config import user_config_file

KEY_FILE_ENV = "PREMATH_WITNESS_KEY_FILE"
SIDECAR_SUFFIX = ".mac"
MAC_KIND = "premath.witness.mac.v1"
ALGORITHM = "hmac-sha256"
_SIDECAR_CAP = 4096
_KEY_FILE_CAP = 1 << 20
_HEADER = (
    "# premath witness MAC keys (specs/mcp-http.md). One key a line: <key id> <64 hex digits>.\n"
    "# The last line signs; every line verifies. Keep this file private (mode 0600).\n"
)


def key_file_path() -> str:
    """Where the witness keys live: the environment's choice, else the user's config folder."""
    return user_config_file("witness.keys", KEY_FILE_ENV)


def sidecar_path(witness_path: str | os.PathLike[str]) -> str:
    return os.fspath(witness_path) + SIDECAR_SUFFIX


def new_run_id() -> str:
    """`run1_<ns>_<random>`: names one pipeline run, bound into its witness's MAC."""
    return f"run1_{epoch_ns()}_{secrets.token_hex(4)}"


@dataclass(frozen=True)
class WitnessKey:
    key_id: str
    secret: bytes = b""

    def mac(self, run_id: str, data: bytes) -> str:
        message = b"\0".join((MAC_KIND.encode(), self.key_id.encode(), run_id.encode(), data))
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class KeyRing:
    """The keys of one key file in file order; the last one signs."""

    path: str
    keys: tuple[WitnessKey, ...]

    @property
    def signing(self) -> WitnessKey:
        return self.keys[-1]

    def find(self, key_id: str) -> WitnessKey | None:
        return next((key for key in self.keys if key.key_id == key_id), None)


def _new_key() -> WitnessKey:
    stamp = epoch_ns() // 1_000_000_000
    return WitnessKey(f"wk_{stamp}_{secrets.token_hex(4)}", secrets.token_bytes(32))


def _key_text(keys: tuple[WitnessKey, ...]) -> bytes:
    return (_HEADER + "".join(f"{k.key_id} {k.secret.hex()}\n" for k in keys)).encode()


def _parse(path: str, data: bytes) -> KeyRing:
    keys: list[WitnessKey] = []
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            secret = bytes.fromhex(parts[1]) if len(parts) == 2 else b""
        except ValueError:
            secret = b""
        if len(secret) < 16 or any(key.key_id == parts[0] for key in keys):
            raise InvalidUsage(
                f"witness key file {path}:{number}: expected `<key id> <64 hex digits>` "
                "with a unique id"
            )
        keys.append(WitnessKey(parts[0], secret))
    if not keys:
        raise InvalidUsage(f"witness key file {path} holds no key; remove it to start afresh")
    return KeyRing(path, tuple(keys))


def load_keyring(path: str | None = None) -> KeyRing | None:
    """The key file's keys, or None when there is none yet; a file others can reach is refused."""
    path = path or key_file_path()
    try:
        with open_regular(path) as handle:
            mode = os.fstat(handle.fileno()).st_mode
            data = read_capped(handle, _KEY_FILE_CAP)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IoFailure(f"failed to read witness key file {path}: {exc.strerror or exc}") from None
    if stat.S_IMODE(mode) & 0o077:
        raise InvalidUsage(
            f"witness key file {path} is open to other users (mode {stat.S_IMODE(mode):04o}); "
            f"run `chmod 600 {path}`"
        )
    return _parse(path, data[:_KEY_FILE_CAP])


def _publish(path: str, data: bytes, *, replace: bool) -> bool:
    """Write a private (0600) file and give it `path`: atomically replacing it, or (not
    `replace`) only if `path` does not exist yet (False then)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    temp = stage_file(os.path.abspath(path), data, mode=0o600)
    try:
        if replace:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path)
            except FileExistsError:
                return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    fsync_directory(Path(folder))
    return True


def ensure_keyring(path: str | None = None) -> KeyRing:
    """The key file's keys, creating the file with one fresh key on first use."""
    path = path or key_file_path()
    ring = load_keyring(path)
    if ring is not None:
        return ring
    try:
        _publish(path, _key_text((_new_key(),)), replace=False)
    except OSError as exc:
        raise IoFailure(
            f"failed to create witness key file {path}: {exc.strerror or exc}; set "
            f"{KEY_FILE_ENV} to a writable private path"
        ) from None
    ring = load_keyring(path)
    assert ring is not None
    return ring


@contextlib.contextmanager
def _editing(path: str) -> Iterator[KeyRing]:
    """The key file's keys under its lock (its folder made private first, as the lock's
    marker would otherwise create it with the default mode)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
    with artifact_lock(path, DEFAULT_LOCK_TIMEOUT_S):
        yield ensure_keyring(path)


def rotate_key(path: str | None = None) -> KeyRing:
    """Append a fresh key: it signs from now on; older keys still verify until retired. A
    missing key file is created with its first key."""
    path = path or key_file_path()
    if load_keyring(path) is None:
        return ensure_keyring(path)
    with _editing(path) as ring:
        _publish(path, _key_text((*ring.keys, _new_key())), replace=True)
    rotated = load_keyring(path)
    assert rotated is not None
    return rotated


def retire_key(key_id: str, path: str | None = None) -> KeyRing:
    """Remove one key that no longer signs: witnesses it signed stop verifying."""
    path = path or key_file_path()
    with _editing(path) as ring:
        if ring.find(key_id) is None:
            raise InvalidUsage(f"no key `{key_id}` in {path}")
        if ring.signing.key_id == key_id:
            raise InvalidUsage(
                f"`{key_id}` is the signing key of {path}; rotate first, then retire it"
            )
        _publish(path, _key_text(tuple(k for k in ring.keys if k.key_id != key_id)), replace=True)
    retired = load_keyring(path)
    assert retired is not None
    return retired


def sidecar_bytes(key: WitnessKey, run_id: str, data: bytes) -> bytes:
    document = {
        "schema": 1,
        "kind": MAC_KIND,
        "algorithm": ALGORITHM,
        "keyId": key.key_id,
        "runId": run_id,
        "mac": key.mac(run_id, data),
    }
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS) + b"\n"


def read_private(path: str, cap: int) -> bytes:
    """A regular file that is not a symlink, read up to `cap` bytes (ELOOP for a symlink)."""
    with open_regular(path, follow_symlinks=False) as handle:
        data = read_capped(handle, cap)
    if len(data) > cap:
        raise OSError(errno.EFBIG, f"larger than {cap} bytes")
    return data


@dataclass(frozen=True)
class Verified:
    """A witness whose MAC verified: the run that wrote it and the key that signed it."""

    run_id: str
    key_id: str


def verify(witness_path: str, data: bytes, label: str, ring: KeyRing | None) -> Verified:
    """The run of the witness whose bytes are `data`, or RuleRefused naming why not."""
    mac_path = sidecar_path(witness_path)
    try:
        sidecar = orjson.loads(read_private(mac_path, _SIDECAR_CAP))
    except FileNotFoundError:
        raise RuleRefused(
            "witness.mac_missing",
            f"instruction witness {label} has no MAC ({mac_path} is missing): only a witness "
            "written by premath's instruction pipeline (`premath instruction-run`, the "
            "`instruction_run` tool) authorises a mutation; a hand-written or copied one does not",
        ) from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise RuleRefused(
            "witness.mac_invalid", f"MAC file {mac_path} of instruction witness {label}: {exc}"
        ) from None
    fields = sidecar if isinstance(sidecar, dict) else {}
    key_id, run_id, mac = fields.get("keyId"), fields.get("runId"), fields.get("mac")
    if (
        fields.get("kind") != MAC_KIND
        or fields.get("algorithm") != ALGORITHM
        or not isinstance(key_id, str)
        or not isinstance(run_id, str)
        or not isinstance(mac, str)
    ):
        raise RuleRefused(
            "witness.mac_invalid",
            f"MAC file {mac_path} of instruction witness {label} is not a {MAC_KIND} document",
        )
    if ring is None:
        raise RuleRefused(
            "witness.key_missing",
            f"no witness key file at {key_file_path()}: no witness can verify here; run the "
            f"instruction with `premath instruction-run` on this machine, or set {KEY_FILE_ENV}",
        )
    key = ring.find(key_id)
    if key is None:
        raise RuleRefused(
            "witness.mac_unknown_key",
            f"instruction witness {label} was signed with key `{key_id}`, which {ring.path} "
            "does not hold (retired, or another machine's key)",
        )
    if not hmac.compare_digest(key.mac(run_id, data), mac):
        raise RuleRefused(
            "witness.mac_mismatch",
            f"the MAC of instruction witness {label} does not verify: its bytes changed after "
            "the run that wrote them; run the instruction again",
        )
    return Verified(run_id, key_id)
