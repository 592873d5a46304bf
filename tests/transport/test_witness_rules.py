"""The gate's witness rules (D22-2 to D22-6), in-process: only the pipeline's own witness
authorises a mutation (MAC over its exact bytes, no symlink, not expired, in scope), keys
rotate, and trust `reference` restores the reference's gate."""

import os
import time

import orjson
import pytest

from premath.models.instruction_witness import scope_issue_ids
from premath.store.confine import PathRoots
from premath.store.witness_mac import (
    ensure_keyring,
    load_keyring,
    new_run_id,
    retire_key,
    rotate_key,
    sidecar_bytes,
)
from premath.timefmt import NANOS_PER_SECOND
from premath.transport.instruction_link import (
    GateRefused,
    Mutation,
    WitnessRules,
    resolve_instruction_link,
)
from tests.mcp.client import witness

NOW_NS = int(time.time()) * NANOS_PER_SECOND


def gate(root, instruction_id="i-1", action="issue.claim", *issue_ids, **rules):
    return resolve_instruction_link(
        "instruction-linked",
        instruction_id,
        str(root),
        Mutation(action, issue_ids),
        now_ns=NOW_NS,
        rules=WitnessRules(**rules),
    )


def refusal(root, *args, **rules) -> str:
    with pytest.raises(GateRefused) as refused:
        gate(root, *args, **rules)
    return refused.value.message


def test_a_pipeline_witness_passes_and_a_hand_written_one_is_refused(workdir):
    witness(workdir, "i-1")
    assert gate(workdir).document["instructionId"] == "i-1"
    witness(workdir, "i-2", signed=False)
    assert refusal(workdir, "i-2").startswith(
        "[failureClass=witness.mac_missing] instruction witness `i-2` has no MAC ("
    )
    assert gate(workdir, "i-2", trust="reference").document["instructionId"] == "i-2"


def test_an_edited_witness_is_refused(workdir):
    path = witness(workdir, "i-1", capabilityClaims=["capabilities.change_morphisms"])
    path.write_bytes(
        path.read_bytes().replace(
            b'"capabilities.change_morphisms"',
            b'"capabilities.change_morphisms", "capabilities.change_morphisms.all"',
        )
    )
    message = refusal(workdir)
    assert message.startswith("[failureClass=witness.mac_mismatch] the MAC of instruction ")


def test_a_symlinked_witness_is_refused_even_to_a_signed_file(workdir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    real = witness(elsewhere, "i-1")
    link = workdir / "artifacts" / "ciwitness" / "i-1.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    (workdir / "artifacts" / "ciwitness" / "i-1.json.mac").write_bytes(
        (elsewhere / "artifacts" / "ciwitness" / "i-1.json.mac").read_bytes()
    )
    assert refusal(workdir).startswith("[failureClass=witness.symlink] instruction witness ")
    # the reference's trust follows a link only inside the allowed roots
    assert refusal(workdir, trust="reference").startswith("[failureClass=path.outside_root] ")
    roots = PathRoots.of(str(workdir), [str(elsewhere)])
    assert gate(workdir, trust="reference", roots=roots).document is not None


def test_a_witness_folder_outside_the_roots_is_refused(workdir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    witness(elsewhere, "i-1")
    (workdir / "artifacts").symlink_to(elsewhere / "artifacts")
    assert refusal(workdir).startswith("[failureClass=path.outside_root] instruction witness ")


def test_a_fifo_witness_is_refused_without_blocking(workdir):
    path = workdir / "artifacts" / "ciwitness" / "i-1.json"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    fifo = f"{path} is not a regular file (a FIFO); give the path of a file"
    assert refusal(workdir) == f"failed to read {workdir}/artifacts/ciwitness/i-1.json: {fifo}"
    assert refusal(workdir, trust="reference").endswith(
        "is not a regular file (a FIFO); give the path of a file"
    )


def test_expired_witnesses_are_refused_past_the_max_age(workdir):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW_NS // NANOS_PER_SECOND - 7200))
    witness(workdir, "i-1", runFinishedAt=stamp)
    assert gate(workdir, max_age_s=10800).document is not None
    message = refusal(workdir, max_age_s=3600)
    assert message == (
        f"[failureClass=witness.expired] instruction witness `i-1` is from a run that finished "
        f"at {stamp}, 7200 s ago, past --witness-max-age 3600 s; run the instruction again"
    )
    assert gate(workdir, max_age_s=3600, trust="reference").document is not None


def test_scope_naming_issues_limits_the_mutation(workdir):
    witness(workdir, "i-1", scope={"kind": "issue", "target": "bd-1"})
    assert gate(workdir, "i-1", "issue.claim", "bd-1").issue_scope == frozenset({"bd-1"})
    assert refusal(workdir, "i-1", "issue.claim", "bd-2") == (
        "[failureClass=witness.scope_mismatch] instruction `i-1` is scoped to bd-1; mutation "
        "action `issue.claim` would change bd-2"
    )
    assert gate(workdir, "i-1", "issue.claim", "bd-2", trust="reference").issue_scope is None
    witness(workdir, "i-2", scope={"kind": "repo", "target": "premath"})
    assert gate(workdir, "i-2", "issue.claim", "bd-2").issue_scope is None


@pytest.mark.parametrize(
    ("scope", "ids"),
    [
        ({"kind": "issue", "target": "bd-1"}, {"bd-1"}),
        ({"kind": "issue", "issueId": "bd-3"}, {"bd-3"}),
        ({"kind": "issues", "targets": ["bd-1", "bd-2", 7]}, {"bd-1", "bd-2"}),
        ({"kind": "issue", "target": 5}, set()),
        ({"kind": "repo", "target": "premath"}, None),
        ("whole-repo", None),
        (None, None),
    ],
)
def test_scope_issue_ids(scope, ids):
    found = scope_issue_ids(scope)
    assert (None if found is None else set(found)) == ids


def test_keys_rotate_and_retired_keys_stop_verifying(workdir):
    old = ensure_keyring().signing
    witness(workdir, "i-1")
    rotated = rotate_key()
    assert rotated.signing.key_id != old.key_id
    assert gate(workdir).document is not None
    witness(workdir, "i-2")
    retire_key(old.key_id)
    assert refusal(workdir).startswith("[failureClass=witness.mac_unknown_key] ")
    assert gate(workdir, "i-2").document is not None
    with pytest.raises(Exception, match="is the signing key"):
        retire_key(rotated.signing.key_id)


def test_a_key_file_open_to_others_is_refused(workdir, witness_key_file):
    witness(workdir, "i-1")
    witness_key_file.chmod(0o644)
    assert refusal(workdir).startswith("witness key file ")
    assert "chmod 600" in refusal(workdir)
    witness_key_file.chmod(0o600)
    assert load_keyring() is not None


def test_no_key_file_means_nothing_verifies(workdir, witness_key_file):
    path = witness(workdir, "i-1")
    data = path.read_bytes()
    witness_key_file.unlink()
    assert refusal(workdir).startswith("[failureClass=witness.key_missing] no witness key file ")
    # a sidecar made with someone else's key never verifies here
    other = ensure_keyring(str(witness_key_file) + ".other").signing
    (path.parent / "i-1.json.mac").write_bytes(sidecar_bytes(other, new_run_id(), data))
    ensure_keyring()
    assert refusal(workdir).startswith("[failureClass=witness.mac_unknown_key] ")
    assert orjson.loads(data)["instructionId"] == "i-1"
